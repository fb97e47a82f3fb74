/// How a ``GroupCommitQueue`` whose callers do not wait for the outcome (the decision log) rides out a store that
/// fails for a while: a failed batch is written again after each of ``delays`` (its attempts are
/// `1 + delays.count`), and at most ``maximumQueued`` items wait meanwhile — more are refused at once with
/// ``GroupCommitQueueFull`` instead of growing memory for as long as the store is down.
///
/// A batch is written again whole, so its write must be idempotent (the decision log's is: its rows, each with its snapshot,
/// are keyed and inserted with `ON CONFLICT DO NOTHING`). Once the queue is closed a failed batch is not
/// retried: shutdown is not held up by an outage.
struct BatchRetry: Sendable {
    /// The waits before each further attempt of a failed batch.
    var delays: [Duration]
    /// Items queued at most, the batch being written aside.
    var maximumQueued: Int
    /// Told of each failed attempt of a batch of `items`: `retryAfter` is the wait before the next attempt, `nil`
    /// when the batch is given up (its items fail with `error`).
    var failed: @Sendable (_ error: any Error, _ items: Int, _ attempt: Int, _ retryAfter: Duration?) -> Void
    /// Told when the queue starts refusing items, once a spell: again only after the writer has taken a batch.
    var full: @Sendable (_ queued: Int) -> Void
}

/// An item refused because its ``GroupCommitQueue`` already held ``BatchRetry/maximumQueued`` items.
struct GroupCommitQueueFull: Error, CustomStringConvertible {
    var queued: Int
    var description: String { "\(queued) items already queued" }
}
