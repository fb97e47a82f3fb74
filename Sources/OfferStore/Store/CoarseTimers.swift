import Synchronization

/// Sleeps on one shared clock, for timers that almost never fire: every sleep under way is an entry in a table that
/// one task looks at every ``tick``, ending those whose time has come; a cancelled sleep ends at once.
///
/// Each lease of ``PostgresConnections`` sleeps beside its work (a quarter of its limit sets off a check) and is
/// almost always cancelled long before it would wake. With `Task.sleep` every lease armed a timer of Dispatch's,
/// whose manager thread was woken to arm it and again when it came due: 6.5 % of the server's CPU in a notification
/// burst on PostgreSQL went to timers, 3.5 % now (docs/store.md, "Durability"). Here a lease costs an entry in a
/// table, and the ticking task runs only while some sleep is under way.
///
/// A sleep ends at most one ``tick`` after its time.
final class CoarseTimers: Sendable {
    /// How often the table is looked at while some sleep is under way.
    let tick: Duration
    private let state = Mutex(State())

    private struct State {
        var sleeps: [Sleep] = []
        /// Whether the ticking task runs (it stops when the table is empty).
        var ticking = false
    }

    init(tick: Duration) {
        self.tick = max(tick, .milliseconds(1))
    }

    /// Returns once `duration` has passed (up to one ``tick`` later), or at once when the task is cancelled.
    func sleep(for duration: Duration) async {
        await sleep(until: ContinuousClock.now.advanced(by: duration))
    }

    /// Returns once `deadline` has passed (up to one ``tick`` later), or at once when the task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant) async {
        let sleep = Sleep(until: deadline)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                guard sleep.wait(continuation) else {
                    continuation.resume()
                    return
                }
                let start = state.withLock { state -> Bool in
                    state.sleeps.append(sleep)
                    defer { state.ticking = true }
                    return !state.ticking
                }
                if start { Task.detached { await self.run() } }
            }
        } onCancel: {
            sleep.end()
        }
    }

    /// How many sleeps the table holds (tests).
    var count: Int { state.withLock { $0.sleeps.count } }

    /// Every ``tick``: ends the sleeps whose time has come and drops those that ended; stops when none is left.
    private func run() async {
        while true {
            try? await Task.sleep(for: tick)
            let now = ContinuousClock.now
            let (due, stop) = state.withLock { state -> ([Sleep], Bool) in
                var due: [Sleep] = []
                state.sleeps.removeAll { sleep in
                    if sleep.isOver { return true }
                    guard sleep.deadline <= now else { return false }
                    due.append(sleep)
                    return true
                }
                // A sleep added after this finds the task stopped and starts another.
                if state.sleeps.isEmpty { state.ticking = false }
                return (due, !state.ticking)
            }
            for sleep in due { sleep.end() }
            if stop { return }
        }
    }
}

/// One sleep of ``CoarseTimers``: its time, and the continuation that waits for it until it ends (its time came, or
/// its task was cancelled, whichever is first; the other finds it over).
private final class Sleep: Sendable {
    let deadline: ContinuousClock.Instant
    private let phase = Mutex(Phase.starting)

    private enum Phase {
        case starting
        case waiting(CheckedContinuation<Void, Never>)
        case over
    }

    init(until deadline: ContinuousClock.Instant) {
        self.deadline = deadline
    }

    /// Parks `continuation` until the sleep ends; `false` when it has ended already (the caller resumes it).
    func wait(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        phase.withLock { phase in
            guard case .starting = phase else { return false }
            phase = .waiting(continuation)
            return true
        }
    }

    /// Ends the sleep: resumes its continuation if one waits; a later ``wait(_:)`` returns `false`.
    func end() {
        let waiting = phase.withLock { phase -> CheckedContinuation<Void, Never>? in
            defer { phase = .over }
            guard case .waiting(let continuation) = phase else { return nil }
            return continuation
        }
        waiting?.resume()
    }

    var isOver: Bool {
        phase.withLock { phase in
            guard case .over = phase else { return false }
            return true
        }
    }
}
