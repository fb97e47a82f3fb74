import Dispatch
import Foundation
@testable import OfferStore
import Synchronization
import Testing

/// The group commit's queue on its own, with a writer that records the batches it is given.
@Suite struct GroupCommitQueueTests {
    /// Batches written, in order.
    final class Written: Sendable {
        private let batches = Mutex<[[Int]]>([])
        var all: [[Int]] { batches.withLock { $0 } }
        func append(_ batch: [Int]) { batches.withLock { $0.append(batch) } }
    }

    /// A queue whose writer runs on a queue of its own; each batch takes `pause` seconds.
    private func queue(_ written: Written, pause: Double = 0) -> GroupCommitQueue<Int> {
        GroupCommitQueue(maximumBatch: 100, queue: DispatchQueue(label: "group-commit-test")) { items in
            written.append(items)
            if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            return items.map { _ in nil }
        }
    }

    /// Submits `item` and returns a semaphore signalled at its completion.
    private func submit(_ item: Int, to queue: GroupCommitQueue<Int>, startWhenReady: StartWhenReady? = nil) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        queue.submit(item, startWhenReady: startWhenReady) { result in
            if case .success = result { done.signal() }
        }
        return done
    }

    /// A `startWhenReady` that keeps the start until `release()`.
    final class HeldStart: Sendable {
        private let held = Mutex<[@Sendable () -> Void]>([])
        var count: Int { held.withLock { $0.count } }
        var hand: StartWhenReady { { start in self.held.withLock { $0.append(start) } } }
        func release() { for start in held.withLock({ held in defer { held = [] }; return held }) { start() } }
    }

    @Test("when idle (batches of one) a record starts the writer at once, even when offered to wait")
    func idleStartsAtOnce() {
        let written = Written()
        let queue = queue(written)
        let held = HeldStart()
        for item in 1...3 {
            #expect(submit(item, to: queue, startWhenReady: held.hand).wait(timeout: .now() + 5) == .success)
        }
        #expect(held.count == 0)
        #expect(written.all == [[1], [2], [3]])
    }

    @Test("under load the writer's start waits for its caller, and what is queued meanwhile shares the batch")
    func loadWaitsForTheCaller() {
        let written = Written()
        let queue = queue(written, pause: 0.2)
        // Load: records that arrive while a batch is being written make the next batch hold several.
        let first = submit(1, to: queue)
        Thread.sleep(forTimeInterval: 0.05)
        let seconds = [submit(2, to: queue), submit(3, to: queue)]
        #expect(first.wait(timeout: .now() + 5) == .success)
        for done in seconds { #expect(done.wait(timeout: .now() + 5) == .success) }
        #expect(written.all == [[1], [2, 3]])

        // The writer is idle now; the next record hands its start to the caller.
        let held = HeldStart()
        let waiting = [submit(4, to: queue, startWhenReady: held.hand), submit(5, to: queue, startWhenReady: held.hand), submit(6, to: queue)]
        #expect(held.count == 1)
        #expect(waiting[0].wait(timeout: .now() + 0.3) == .timedOut)  // nothing written before the start
        held.release()
        for done in waiting { #expect(done.wait(timeout: .now() + 5) == .success) }
        #expect(written.all.last == [4, 5, 6])
    }
}
