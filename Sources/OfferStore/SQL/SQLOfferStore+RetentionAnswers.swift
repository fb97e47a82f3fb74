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
    /// batch (in one order, so two writers never wait on each other), the answers in one multi-row INSERT (an
    /// app's `requestIdentifier` recorded before is skipped), then `saved_at` for each new answer a renewal or
    /// auto-renew turned back on, recorded before it, already saves.
    static func writeRetentionAnswers(_ answers: [RetentionAnswerRecord], backend: any SQLStoreBackend, logger: Logger) async throws -> [(any Error)?] {
        do {
            try await backend.transaction { database in
                let subscriptions = Set(answers.map { Subscription(originalTransactionId: $0.originalTransactionId, environment: $0.environment) })
                    .sorted { ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId) }
                for subscription in subscriptions {
                    try await backend.lockSubscriptionOutcomes(subscription.originalTransactionId, environment: subscription.environment, on: database)
                }
                let inserted = Set(try await database.insert(into: "retention_answers")
                    .columns("bundle_identifier", "request_identifier", "environment", "original_transaction_id", "product_identifier",
                             "offered", "answered_at")
                    .rows(answers.map { answer -> [any SQLExpression] in
                        [SQLBind(answer.bundleIdentifier), SQLBind(answer.requestIdentifier), SQLBind(answer.environment),
                         SQLBind(answer.originalTransactionId), SQLBind(answer.productIdentifier),
                         SQLBind(answer.offered ? 1 : 0), SQLBind(answer.answeredAt)]
                    })
                    .ignoringConflicts(with: ["bundle_identifier", "request_identifier"])
                    .returning("bundle_identifier", "request_identifier")
                    .all(decoding: AnswerIdentity.self, keyDecodingStrategy: .convertFromSnakeCase))
                guard !inserted.isEmpty else { return }
                // The first of a requestIdentifier repeated within the batch is the one its INSERT kept.
                var fresh: [AnswerIdentity: RetentionAnswerRecord] = [:]
                for answer in answers where inserted.contains(AnswerIdentity(answer)) && fresh[AnswerIdentity(answer)] == nil {
                    fresh[AnswerIdentity(answer)] = answer
                }
                let saving: Set<String> = [SubscriptionEvent.Kind.renewed.rawValue, SubscriptionEvent.Kind.autoRenewEnabled.rawValue]
                for subscription in subscriptions {
                    let answered = fresh.values.filter { $0.originalTransactionId == subscription.originalTransactionId && $0.environment == subscription.environment }
                    guard !answered.isEmpty else { continue }
                    let savedAt = try await Self.events(of: subscription.originalTransactionId, environment: subscription.environment, on: database)
                        .filter { saving.contains($0.kind) }.map(\.at)
                    guard !savedAt.isEmpty else { continue }
                    for answer in answered {
                        guard let saved = savedAt.filter({ $0 >= answer.answeredAt }).min() else { continue }
                        try await database.update("retention_answers").set("saved_at", to: SQLBind(saved))
                            .where("bundle_identifier", .equal, answer.bundleIdentifier).where("request_identifier", .equal, answer.requestIdentifier)
                            .run()
                    }
                }
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

    /// What identifies a retention answer: its app and the App Store's `requestIdentifier`.
    private struct AnswerIdentity: Hashable, Decodable {
        var bundleIdentifier: String, requestIdentifier: String
        init(_ answer: RetentionAnswerRecord) { (bundleIdentifier, requestIdentifier) = (answer.bundleIdentifier, answer.requestIdentifier) }
    }
}
