import Foundation
import Synchronization
import Testing

@testable import OfferKeys

/// How a replica follows a document other replicas change (key states, the policy): each notification's read
/// starts as it arrives (``RefreshSchedule``), so a revoke that follows an activation is not read after it.
@Suite struct RefreshScheduleTests {
    @Test("two reads at a time; a notification beyond them makes the next one to finish read once more")
    func schedule() {
        var schedule = RefreshSchedule(maximumRunning: 2)
        // Four notifications: two reads start, the other two make one of them read once more.
        let started = (0..<4).map { _ in schedule.notified() }
        #expect(started == [true, true, false, false])
        // The first to finish reads again; then both end.
        let again = (0..<3).map { _ in schedule.finished() }
        #expect(again == [true, false, false])
        #expect(schedule.running == 0)
        let next = schedule.notified()
        #expect(next, "nothing running: the next notification reads at once")
    }

    @Test("a second notification is read while the first one's read is still out")
    func readsOverlap() async throws {
        let (changes, continuation) = AsyncStream.makeStream(of: String.self)
        let started = Mutex(0)
        let overlapped = Mutex(false)
        let follower = Task {
            await followDocument(named: "key-states", changes: { changes }, every: .seconds(3_600)) {
                let number = started.withLock { count -> Int in
                    count += 1
                    return count
                }
                guard number == 1 else { return }
                // The first read waits (at most 5 s) for the second to start: it does only if reads overlap.
                for _ in 0..<500 where !overlapped.withLock({ $0 }) {
                    if started.withLock({ $0 }) >= 2 { overlapped.withLock { $0 = true } }
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        continuation.yield("key-states")
        continuation.yield("policy")  // another document: no read
        continuation.yield("key-states")
        for _ in 0..<600 where !overlapped.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(50))
        let reads = started.withLock { $0 }
        follower.cancel()  // (the hourly poll's sleep ends with it, and reads once more)
        continuation.finish()
        await follower.value
        let didOverlap = overlapped.withLock { $0 }
        #expect(didOverlap)
        #expect(reads == 2)
    }
}
