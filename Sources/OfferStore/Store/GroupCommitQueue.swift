import Foundation

/// Group commit, shared by both stores: callers submit items and wait; one writer at a time takes everything
/// queued (up to `maximumBatch`) and writes it as one batch (one transaction, one flush), then resumes every
/// caller of that batch with its own outcome. Under load the next batch fills while the previous one is being
/// written; when idle an item is written at once.
final class GroupCommitQueue<Item: Sendable>: @unchecked Sendable {
    /// Writes a batch durably. Returns one outcome per item (`nil`: written); throwing fails the whole batch.
    typealias Write = @Sendable ([Item]) async throws -> [(any Error)?]

    // @unchecked: `waiting`, `flushing` and `write` are only touched under `lock`.
    private let lock = NSLock()
    private var waiting: [(Item, CheckedContinuation<Void, any Error>)] = []
    private var flushing = false
    private let maximumBatch: Int
    private var write: Write?

    init(maximumBatch: Int = 1000) {
        self.maximumBatch = maximumBatch
    }

    /// Sets the writer; a store calls it at the end of its initialiser (the writer refers to the store).
    func setWriter(_ write: @escaping Write) {
        lock.withLock { self.write = write }
    }

    /// Whether a batch is being written or waiting to be.
    var isBusy: Bool { lock.withLock { flushing } }

    /// Queues `item` and returns once it is written; throws its own error or its batch's.
    func submit(_ item: Item) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let startWriter = lock.withLock { () -> Bool in
                waiting.append((item, continuation))
                if flushing { return false }
                flushing = true
                return true
            }
            if startWriter {
                Task { await self.writeUntilEmpty() }
            }
        }
    }

    private func writeUntilEmpty() async {
        while true {
            let batch = lock.withLock { () -> [(Item, CheckedContinuation<Void, any Error>)] in
                let taken = Array(waiting.prefix(maximumBatch))
                waiting.removeFirst(taken.count)
                if taken.isEmpty { flushing = false }
                return taken
            }
            if batch.isEmpty { return }
            do {
                guard let write = lock.withLock({ self.write }) else {
                    throw OfferStoreError(code: .unavailable, message: "The store is not ready to record.")
                }
                let outcomes = try await write(batch.map(\.0))
                for (index, (_, continuation)) in batch.enumerated() {
                    if index < outcomes.count, let error = outcomes[index] {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume()
                    }
                }
            } catch {
                for (_, continuation) in batch { continuation.resume(throwing: error) }
            }
        }
    }
}
