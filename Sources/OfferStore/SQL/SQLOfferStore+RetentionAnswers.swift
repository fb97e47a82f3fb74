import Foundation
import Logging
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: retention answers (schema version 8), batched

    /// Records a retention answer through ``retentionAnswerRecorder``: returns once the batch holding it is
    /// committed and on disk. Apple's performance test sends every request for one original transaction: one
    /// transaction a request would queue them all on that subscription's lock (PostgreSQL) or on the one writer
    /// (SQLite); a batch takes the lock once for all of them.
    func recordRetentionAnswer(_ answer: RetentionAnswerRecord) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            retentionAnswerRecorder.submit(answer) { continuation.resume(with: $0) }
        }
    }

    /// Writes one batch of retention answers in one transaction: the outcome lock of each subscription in the
    /// batch (in one order, so two writers never wait on each other), then the answers in one multi-row INSERT (an
    /// app's `requestIdentifier` recorded before is skipped), each saved at once by the earliest renewal or
    /// auto-renew turned back on recorded at or after it (``RetentionAnswerInsert``). The INSERT runs after the locks
    /// are held, so it sees every event whose transaction held them before.
    static func writeRetentionAnswers(_ answers: [RetentionAnswerRecord], backend: any SQLStoreBackend, logger: Logger) async throws -> [(any Error)?]
    {
        do {
            if let writer = backend.retentionAnswersWriter {
                try await backend.mappingErrors { try await writer(answers) }
                return answers.map { _ in nil }
            }
            try await backend.transaction { database in
                let subscriptions = Set(answers.map { Subscription(originalTransactionId: $0.originalTransactionId, environment: $0.environment) })
                    .sorted { ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId) }
                for subscription in subscriptions {
                    try await backend.lockSubscriptionOutcomes(
                        subscription.originalTransactionId,
                        environment: subscription.environment,
                        on: database
                    )
                }
                try await database.raw("\(RetentionAnswerInsert(answers: answers))").run()
            }
            return answers.map { _ in nil }
        } catch {
            logger.error("retention answers not recorded", metadata: ["count": "\(answers.count)", "error": "\(error)"])
            throw error
        }
    }

    private struct Subscription: Hashable {
        var originalTransactionId: String, environment: String
    }

}

/// `INSERT INTO retention_answers` for a batch, one row per answer, each with its `saved_at`: the earliest renewal
/// or auto-renew turned back on of its subscription at or after the answer (`NULL`: none yet; a later event sets it,
/// ``SQLOfferStore/recordSubscriptionEvent(_:)``). An app's `requestIdentifier` recorded before — or earlier in the
/// batch — is skipped.
struct RetentionAnswerInsert: SQLExpression {
    var answers: [RetentionAnswerRecord]

    /// A retention answer's `saved_at` as it is recorded: the earliest renewal or auto-renew turned back on of its
    /// subscription at or after it (values: its original transaction, environment and time); PostgreSQL's function
    /// (``PostgresAnswers/recordRetentionAnswersFunction``) fills it with its columns.
    static let savedAt = StatementText(
        "(SELECT MIN(at) FROM subscription_events WHERE original_transaction_id = ",
        " AND environment = ",
        " AND kind IN ('\(SubscriptionEvent.Kind.renewed.rawValue)', '\(SubscriptionEvent.Kind.autoRenewEnabled.rawValue)') AND at >= ",
        ")"
    )

    func serialize(to serializer: inout SQLSerializer) {
        serializer.write(
            "INSERT INTO retention_answers (bundle_identifier, request_identifier, environment, original_transaction_id, "
                + "product_identifier, offered, answered_at, saved_at) VALUES "
        )
        for (index, answer) in answers.enumerated() {
            serializer.write(index == 0 ? "(" : ", (")
            for value in [
                answer.bundleIdentifier, answer.requestIdentifier, answer.environment, answer.originalTransactionId, answer.productIdentifier,
            ] {
                serializer.write(bind: value)
                serializer.write(", ")
            }
            serializer.write(bind: answer.offered ? 1 : 0)
            serializer.write(", ")
            serializer.write(bind: answer.answeredAt)
            serializer.write(", ")
            Self.savedAt.write([answer.originalTransactionId, answer.environment, answer.answeredAt], to: &serializer)
            serializer.write(")")
        }
        serializer.write(" ON CONFLICT (bundle_identifier, request_identifier) DO NOTHING")
    }
}
