import Foundation
import OfferModel
import SQLKit

/// One customer's story for support (the console's customer page): the decisions the log kept about them and what
/// their offers became.
extension SQLOfferStore {
    func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord] {
        // The log has no index on the customer: the window bounds the scan (the primary key leads with decided_at).
        try await backend.reading { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: DecisionRow.columns) FROM policy_decisions
                WHERE decided_at >= \(bind: since) AND bundle_identifier = \(bind: bundleIdentifier) AND customer_hash = \(bind: customerHash)
                ORDER BY decided_at DESC, id DESC LIMIT \(bind: max(1, min(limit, 1_000)))
                """
            ).all(decoding: DecisionRow.self)
        }.map(\.record)
    }

    func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes {
        let originals = Array(Set(originalTransactionIds).sorted().prefix(100))
        let bounded = max(1, min(limit, 1_000))
        return try await backend.reading { database in
            // Filed under the customer, or about one of their subscriptions (an original transaction they own).
            let filter: SQLQueryString =
                originals.isEmpty
                ? "(bundle_identifier = \(bind: key.bundleIdentifier) AND application_username = \(bind: key.applicationUsername))"
                : """
                ((bundle_identifier = \(bind: key.bundleIdentifier) AND application_username = \(bind: key.applicationUsername)) OR \
                original_transaction_id IN (\(binds: originals)))
                """
            let redemptions = try await database.raw(
                """
                SELECT environment, transaction_id, original_transaction_id, bundle_identifier, application_username,
                    product_identifier, offer_type, offer_identifier, offer_discount_type, offer_period, price, currency,
                    storefront, purchase_date, signature_channel, signature_timestamp, renewed_at, refunded_at, expired_at
                FROM redemptions WHERE \(filter)
                ORDER BY purchase_date DESC, transaction_id LIMIT \(bind: bounded)
                """
            ).all(decoding: RedemptionRow.self, keyDecodingStrategy: .convertFromSnakeCase)
            var answers: [RetentionRow] = []
            if !originals.isEmpty {
                answers = try await database.raw(
                    """
                    SELECT bundle_identifier, request_identifier, environment, original_transaction_id, product_identifier,
                        offered, answered_at, saved_at
                    FROM retention_answers
                    WHERE original_transaction_id IN (\(binds: originals)) AND bundle_identifier = \(bind: key.bundleIdentifier)
                    ORDER BY answered_at DESC, request_identifier LIMIT \(bind: bounded)
                    """
                ).all(decoding: RetentionRow.self, keyDecodingStrategy: .convertFromSnakeCase)
            }
            return CustomerOutcomes(
                redemptions: redemptions.map { row in
                    CustomerOutcomes.RedemptionHistory(
                        redemption: Redemption(
                            environment: row.environment,
                            transactionId: row.transactionId,
                            originalTransactionId: row.originalTransactionId,
                            customer: CustomerKey(bundleIdentifier: row.bundleIdentifier, applicationUsername: row.applicationUsername),
                            productIdentifier: row.productIdentifier,
                            offerType: Int32(clamping: row.offerType),
                            offerIdentifier: row.offerIdentifier.isEmpty ? nil : row.offerIdentifier,
                            offerDiscountType: row.offerDiscountType,
                            offerPeriod: row.offerPeriod,
                            price: row.price,
                            currency: row.currency,
                            storefront: row.storefront,
                            purchaseDate: row.purchaseDate
                        ),
                        signatureChannel: row.signatureChannel,
                        signatureTimestamp: row.signatureTimestamp,
                        renewedAt: row.renewedAt,
                        refundedAt: row.refundedAt,
                        expiredAt: row.expiredAt
                    )
                },
                retentionAnswers: answers.map { row in
                    CustomerOutcomes.RetentionHistory(
                        answer: RetentionAnswerRecord(
                            bundleIdentifier: row.bundleIdentifier,
                            requestIdentifier: row.requestIdentifier,
                            environment: row.environment,
                            originalTransactionId: row.originalTransactionId,
                            productIdentifier: row.productIdentifier,
                            offered: row.offered != 0,
                            answeredAt: row.answeredAt
                        ),
                        savedAt: row.savedAt
                    )
                }
            )
        }
    }

    // Rows as read: the snake_case columns, decoded to these names.
    private struct RedemptionRow: Decodable, Sendable {
        var environment: String, transactionId: String, originalTransactionId: String, bundleIdentifier: String
        var applicationUsername: String, productIdentifier: String, offerType: Int64, offerIdentifier: String
        var offerDiscountType: String?, offerPeriod: String?, price: Int64?, currency: String?, storefront: String?
        var purchaseDate: Int64, signatureChannel: String?, signatureTimestamp: Int64?
        var renewedAt: Int64?, refundedAt: Int64?, expiredAt: Int64?
    }

    private struct RetentionRow: Decodable, Sendable {
        var bundleIdentifier: String, requestIdentifier: String, environment: String, originalTransactionId: String
        var productIdentifier: String, offered: Int64, answeredAt: Int64, savedAt: Int64?
    }
}
