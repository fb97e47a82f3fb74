import Dispatch
import Foundation
import OfferModel
import Synchronization
import Testing

@testable import OfferStore

/// The group commit's queue on its own, with a writer that records the batches it is given.
@Suite struct GroupCommitQueueTests {
    /// Batches written, in order.
    final class Written: Sendable {
        private let batches = Mutex<[[Int]]>([])
        var all: [[Int]] { batches.withLock { $0 } }
        func append(_ batch: [Int]) { batches.withLock { $0.append(batch) } }
    }

    /// A queue whose writer runs on a queue of its own; a batch holding `held` waits for `release` before it is
    /// written (a slow flush, with the next records queued behind it).
    private func queue(
        _ written: Written,
        holding held: Int? = nil,
        entered: DispatchSemaphore? = nil,
        until release: DispatchSemaphore? = nil
    ) -> GroupCommitQueue<Int> {
        GroupCommitQueue(maximumBatch: 100, queue: DispatchQueue(label: "group-commit-test")) { items in
            if let held, items.contains(held) {
                entered?.signal()
                release?.wait()
            }
            written.append(items)
            return items.map { _ in nil }
        }
    }

    /// Makes the queue's recent batches [1] and [2, 3]: records that arrived together, as under load.
    private func load(_ written: Written) -> GroupCommitQueue<Int> {
        let (entered, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let queue = queue(written, holding: 1, entered: entered, until: release)
        let first = submit(1, to: queue)
        #expect(entered.wait(timeout: .now() + 60) == .success)  // the writer has taken [1]
        let behind = [submit(2, to: queue), submit(3, to: queue)]  // queued while [1] is being written
        release.signal()
        #expect(first.wait(timeout: .now() + 60) == .success)
        for done in behind { #expect(done.wait(timeout: .now() + 60) == .success) }
        #expect(written.all == [[1], [2, 3]])
        waitUntilIdle(queue)  // completions run just before the writer marks itself idle
        return queue
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
        func release() {
            for start in held.withLock({ held in
                defer { held = [] }
                return held
            }) { start() }
        }
    }

    @Test("when idle (batches of one) a record starts the writer at once, even when offered to wait")
    func idleStartsAtOnce() {
        let written = Written()
        let queue = queue(written)
        let held = HeldStart()
        for item in 1...3 {
            #expect(submit(item, to: queue, startWhenReady: held.hand).wait(timeout: .now() + 60) == .success)
        }
        #expect(held.count == 0)
        #expect(written.all == [[1], [2], [3]])
    }

    @Test("under load the writer's start waits for its caller, and what is queued meanwhile shares the batch")
    func loadWaitsForTheCaller() {
        let written = Written()
        let queue = load(written)
        // The writer is idle now; the next record hands its start to the caller.
        let held = HeldStart()
        let waiting = [submit(4, to: queue, startWhenReady: held.hand), submit(5, to: queue, startWhenReady: held.hand), submit(6, to: queue)]
        #expect(held.count == 1)
        Thread.sleep(forTimeInterval: 0.2)
        #expect(written.all.count == 2)  // nothing written before the start
        held.release()
        for done in waiting { #expect(done.wait(timeout: .now() + 60) == .success) }
        #expect(written.all.last == [4, 5, 6])
    }

    @Test("closing the queue writes what waits behind a start its caller never ran")
    func closeStartsAPendingWriter() async {
        let written = Written()
        let queue = load(written)
        let held = HeldStart()  // never released: an event loop that stopped
        let waiting = submit(4, to: queue, startWhenReady: held.hand)
        #expect(held.count == 1)
        let closing = Task { await queue.close() }
        // Waited for off the cooperative pool: a blocked pool thread (two on a 2-core machine, shared by the suite's
        // parallel tests) could keep `close()` from running at all.
        let written4 = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: waiting.wait(timeout: .now() + 120) == .success) }
        }
        #expect(written4)
        guard written4 else { return }  // close() would never return
        await closing.value
        #expect(written.all.last == [4])
        held.release()  // the start, run late, finds nothing to do
        #expect(written.all.count == 3)
    }

    private func waitUntilIdle(_ queue: GroupCommitQueue<Int>) {
        for _ in 0..<500 where !queue.isIdle { Thread.sleep(forTimeInterval: 0.01) }
    }

    @Test("a gathering writer waits before a batch: items submitted meanwhile share it; a drain does not wait the gather out")
    func gatheringSharesOneBatch() async throws {
        let written = Written()
        let queue = GroupCommitQueue<Int>(
            maximumBatch: 100,
            retry: BatchRetry(delays: [], maximumQueued: 1_000, failed: { _, _, _, _ in }, full: { _ in }),
            gather: .seconds(2)
        ) { items in
            written.append(items)
            return items.map { _ in nil }
        }
        let done = (0..<5).map { submit($0, to: queue) }
        // Within the gather: nothing written yet, one batch once it ends.
        try await Task.sleep(for: .milliseconds(50))
        #expect(written.all.isEmpty)
        for item in done { #expect(await Task.detached { item.wait(timeout: .now() + 60) }.value == .success) }
        #expect(written.all == [[0, 1, 2, 3, 4]])
        // A drain asked for while the writer gathers cuts the gather short.
        let more = submit(5, to: queue)
        try await Task.sleep(for: .milliseconds(50))
        #expect(written.all.count == 1)
        let start = ContinuousClock.now
        await queue.drain()
        #expect(ContinuousClock.now - start < .milliseconds(1_500))
        #expect(await Task.detached { more.wait(timeout: .now() + 60) }.value == .success)
        #expect(written.all == [[0, 1, 2, 3, 4], [5]])
        await queue.close()
    }
}
