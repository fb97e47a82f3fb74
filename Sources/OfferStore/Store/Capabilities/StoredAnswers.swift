import Foundation
import OfferModel

/// A customer's signing transaction, serialized per customer, and the answers it stores under an idempotency key.
public protocol StoredAnswers: Sendable {
    /// Runs `body` with the customer's facts and their issued signatures since `since` (Unix ms), serialized
    /// against every other `withCustomerTransaction`/`updateCustomer` for the same customer (also across
    /// processes sharing the database); what `body` returns is written in the same transaction: the facts
    /// (if changed) and the signature record (if any) — both durable before this returns, or neither.
    ///
    /// This is how a capped offer, a cool-down or a customer-service grant holds under concurrency: the decision
    /// reads the signatures already issued, and the signature it allows is recorded before the next decision for
    /// this customer can read. An error thrown by `body` rolls everything back and is rethrown unchanged.
    /// - Throws: ``OfferStoreError`` `duplicateNonce` when the record's nonce was recorded before (nothing is
    ///   written), `unavailable`.
    ///
    /// With an `answerKey` (an idempotency key, e.g. the App Store's `requestIdentifier`), the answer the first
    /// transaction under that key committed (``CustomerCommit/answer``) is shown to every later one
    /// (``CustomerSnapshot/storedAnswer``), which then writes nothing: a retried request gets the same answer and
    /// no second signature. The key is claimed before the body runs, so concurrent first uses of one key — under
    /// different customers' locks, on different replicas — wait for each other, and the later sees the earlier's
    /// answer. Answers are kept until ``purgeExpired(storedAnswersBefore:processedNotificationsBefore:)``. With an
    /// `answerKey` and `since` `Int64.max` (the body reads no signatures: a flow here for its idempotency alone),
    /// nothing is locked while the body decides: its answer is stored under the key, with its record, only if no
    /// other was stored meanwhile — else nothing is written and the body is shown that answer, whose value is
    /// returned. One customer's requests under different keys so do not wait for each other; facts the body returns
    /// are written under the customer's lock.
    func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        answerKey: String?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T

    /// Deletes stored answers created before `storedAnswersBefore` and processed notification UUIDs recorded before
    /// `processedNotificationsBefore`.
    /// - Returns: how many rows of each went.
    func purgeExpired(storedAnswersBefore: Date, processedNotificationsBefore: Date) async throws -> (storedAnswers: Int, processedNotifications: Int)
}

extension StoredAnswers {
    /// ``withCustomerTransaction(_:issuedSince:answerKey:_:)`` without an idempotency key.
    public func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        try await withCustomerTransaction(key, issuedSince: since, answerKey: nil, body)
    }
}
