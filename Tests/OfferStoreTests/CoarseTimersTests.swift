import Testing

@testable import OfferStore

/// The shared clock of PostgreSQL's leases: a sleep ends when its time has come, or at once when cancelled, and the
/// table empties (its ticking task stops) when no sleep is under way.
@Suite struct CoarseTimersTests {
    @Test func aSleepEndsNoEarlierThanItsTime() async {
        let timers = CoarseTimers(tick: .milliseconds(5))
        let clock = ContinuousClock()
        for duration in [Duration.milliseconds(1), .milliseconds(30), .milliseconds(60)] {
            let slept = await clock.measure { await timers.sleep(for: duration) }
            #expect(slept >= duration)
        }
        await until { timers.count == 0 }
    }

    @Test func aSleepUntilAPastInstantEndsWithinATick() async {
        let timers = CoarseTimers(tick: .milliseconds(5))
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(20)
        await timers.sleep(until: deadline)
        #expect(clock.now >= deadline)
        // A deadline already past: the next look at the table ends it.
        await timers.sleep(until: deadline)
        #expect(clock.now >= deadline)
    }

    @Test func aCancelledSleepEndsAtOnce() async {
        let timers = CoarseTimers(tick: .milliseconds(5))
        let clock = ContinuousClock()
        let started = clock.now
        let sleeping = Task { await timers.sleep(for: .seconds(600)) }
        await until { timers.count == 1 }
        sleeping.cancel()
        await sleeping.value
        #expect(clock.now - started < .seconds(60))
        await until { timers.count == 0 }
    }

    @Test func aSleepInATaskCancelledBeforeItStartsEndsAtOnce() async {
        let timers = CoarseTimers(tick: .milliseconds(5))
        let clock = ContinuousClock()
        let started = clock.now
        let sleeping = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await timers.sleep(for: .seconds(600))
        }
        await sleeping.value
        #expect(clock.now - started < .seconds(60))
        #expect(timers.count == 0)
    }

    /// Many sleeps at once, some cancelled, some left to their time (a burst of leases): each ends, none early, and
    /// the table is empty after.
    @Test func manySleepsEachEndOnce() async {
        let timers = CoarseTimers(tick: .milliseconds(2))
        let clock = ContinuousClock()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    if index.isMultiple(of: 2) {
                        let duration = Duration.milliseconds(index % 20)
                        let slept = await clock.measure { await timers.sleep(for: duration) }
                        #expect(slept >= duration)
                    } else {
                        let sleeping = Task { await timers.sleep(for: .seconds(600)) }
                        sleeping.cancel()
                        await sleeping.value
                    }
                }
            }
        }
        await until { timers.count == 0 }
        // The clock starts again for a sleep after it stopped.
        let slept = await clock.measure { await timers.sleep(for: .milliseconds(10)) }
        #expect(slept >= .milliseconds(10))
    }

    /// Waits until `condition` holds, up to ten seconds, and records an issue if it never does.
    private func until(_ condition: () -> Bool) async {
        for _ in 0..<1000 {
            if condition() { return }
            try? await Task.sleep(for: .milliseconds(10))
        }
        #expect(condition())
    }
}
