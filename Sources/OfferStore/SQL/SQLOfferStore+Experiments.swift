import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: experiments

    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool {
        try await backend.transaction { database in
            try await database.insert(into: "experiment_exposures")
                .columns("experiment_identifier", "bundle_identifier", "application_username", "variant", "exposed_at")
                .values(
                    SQLBind(exposure.experimentIdentifier),
                    SQLBind(exposure.customer.bundleIdentifier),
                    SQLBind(exposure.customer.applicationUsername),
                    SQLBind(exposure.variant),
                    SQLBind(exposure.exposedAt.unixMilliseconds)
                )
                .ignoringConflicts(with: ["experiment_identifier", "bundle_identifier", "application_username"])
                .returning("variant").first() != nil
        }
    }

    func exposureCounts(experimentIdentifier: String) async throws -> [String: Int] {
        try await backend.reading { database in try await Self.exposureCounts(experimentIdentifier, on: database) }
    }

    /// The customers exposed to an experiment by variant, read on `database` (inside a caller's transaction).
    private static func exposureCounts(_ experimentIdentifier: String, on database: any SQLDatabase) async throws -> [String: Int] {
        let rows = try await database.select().column("variant").column(SQLFunction("COUNT", args: SQLLiteral.all), as: "customers")
            .from("experiment_exposures").where("experiment_identifier", .equal, experimentIdentifier)
            .groupBy("variant")
            .all(decoding: CountRow.self)
        return Dictionary(rows.map { ($0.variant, $0.customers) }, uniquingKeysWith: +)
    }

    func experimentOutcomes(_ query: ExperimentOutcomeQuery) async throws -> [String: ExperimentVariantOutcome] {
        // One read: the exposures and what the exposed did, seen at the same moment (no count above exposed).
        try await backend.reading { database in
            let experiment = query.experimentIdentifier
            let beforeEnd: SQLQueryString = query.exposedBefore.map { "AND exposed_at < \(bind: $0)" } ?? ""
            let exposedRows = try await database.raw(
                """
                SELECT variant, COUNT(*) AS customers, COUNT(CASE WHEN exposed_at <= \(bind: query.matureAt) THEN 1 END) AS mature
                FROM experiment_exposures WHERE experiment_identifier = \(bind: experiment) \(beforeEnd) GROUP BY variant
                """
            ).all(decoding: ExposedRow.self)
            var outcomes: [String: ExperimentVariantOutcome] = [:]
            for row in exposedRows { outcomes[row.variant] = ExperimentVariantOutcome(exposed: row.customers, mature: row.mature) }
            // The mature customers, each with the end of their window; the product's subscription group(s).
            let window = query.window
            let mature: SQLQueryString = """
                WITH m AS (SELECT variant, bundle_identifier, application_username, exposed_at, exposed_at + \(bind: window) AS window_end
                  FROM experiment_exposures WHERE experiment_identifier = \(bind: experiment) AND exposed_at <= \(bind: query.matureAt) \(beforeEnd)),
                g AS (SELECT DISTINCT subscription_group_identifier FROM subscription_transactions
                  WHERE bundle_identifier = \(bind: query.bundleIdentifier) AND product_identifier = \(bind: query.productIdentifier))
                """
            let inGroup: SQLQueryString = """
                FROM m JOIN subscription_transactions t ON t.bundle_identifier = m.bundle_identifier AND t.application_username = \
                m.application_username
                WHERE t.subscription_group_identifier IN (SELECT subscription_group_identifier FROM g)
                """
            let customers = try await database.raw(
                """
                \(mature) SELECT m.variant AS variant,
                  COUNT(DISTINCT CASE WHEN t.price > 0 AND t.purchase_date >= m.exposed_at AND t.purchase_date < m.window_end
                    AND (t.revocation_date IS NULL OR t.revocation_date >= m.window_end) THEN m.application_username END) AS converted,
                  COUNT(DISTINCT CASE WHEN t.purchase_date <= m.window_end AND t.expires_date > m.window_end
                    AND (t.revocation_date IS NULL OR t.revocation_date > m.window_end) THEN m.application_username END) AS retained
                \(inGroup) GROUP BY m.variant
                """
            ).all(decoding: GroupRow.self)
            for row in customers {
                outcomes[row.variant]?.converted = row.converted
                outcomes[row.variant]?.retained = row.retained
            }
            // Realized revenue: every transaction of the group in the window, a refund within it taking it back; per
            // customer first (the comparison's interval needs each customer's square and the largest), then per variant.
            let revenue = try await database.raw(
                """
                \(mature), c AS (SELECT m.variant AS variant, t.currency AS currency, SUM(t.price) AS total
                \(inGroup) AND t.price IS NOT NULL AND t.currency IS NOT NULL AND t.purchase_date >= m.exposed_at AND t.purchase_date < m.window_end
                  AND (t.revocation_date IS NULL OR t.revocation_date >= m.window_end)
                GROUP BY m.variant, m.bundle_identifier, m.application_username, t.currency)
                SELECT variant, currency, CAST(SUM(total) AS BIGINT) AS milliunits, COUNT(CASE WHEN total > 0 THEN 1 END) AS payers,
                  SUM(CAST(total AS DOUBLE PRECISION) * CAST(total AS DOUBLE PRECISION)) AS squares, CAST(MAX(total) AS BIGINT) AS largest
                FROM c GROUP BY variant, currency
                """
            ).all(decoding: RevenueRow.self)
            for row in revenue {
                outcomes[row.variant]?.revenue[row.currency, default: 0] += row.milliunits
                outcomes[row.variant]?.revenueDetail[row.currency] = ExperimentVariantOutcome.RevenueDetail(
                    payers: row.payers,
                    sumOfSquares: row.squares,
                    largest: max(row.largest, 0)
                )
            }
            for (variant, identifiers) in query.offers where !identifiers.isEmpty && outcomes[variant] != nil {
                // Promotional offers only (offer type 2, or 5 for a retention offer): an offer code or a win-back
                // offer that shares an identifier is not this experiment's.
                let redeemed = try await database.raw(
                    """
                    \(mature) SELECT COUNT(DISTINCT r.application_username) AS redeemed,
                      COUNT(DISTINCT CASE WHEN r.renewed_at < m.window_end THEN r.application_username END) AS renewed
                    FROM m JOIN redemptions r ON r.bundle_identifier = m.bundle_identifier AND r.application_username = m.application_username
                    WHERE m.variant = \(bind: variant) AND r.product_identifier = \(bind: query.productIdentifier)
                      AND r.offer_identifier IN (\(binds: identifiers)) AND r.offer_type IN (2, 5) AND r.period_of IS NULL
                      AND r.purchase_date >= m.exposed_at AND r.purchase_date < m.window_end
                    """
                ).first(decoding: CustomersRow.self)
                outcomes[variant]?.redeemed = redeemed?.redeemed ?? 0
                outcomes[variant]?.renewedAfterOffer = redeemed?.renewed ?? 0
            }
            return outcomes
        }
    }

    func recordTransaction(_ transaction: SubscriptionTransaction) async throws {
        try await backend.transaction { database in try await Self.record(transaction, on: database) }
    }

    /// ``recordTransaction(_:)`` inside the caller's transaction.
    static func record(_ transaction: SubscriptionTransaction, on database: any SQLDatabase) async throws {
        // A transaction delivered again (a refund's notification carries it with its revocation date) keeps what
        // was known and adds what is new.
        let now = Date().unixMilliseconds
        try await database.raw(
            """
            INSERT INTO subscription_transactions (environment, transaction_id, original_transaction_id, bundle_identifier,
              application_username, product_identifier, subscription_group_identifier, price, currency, purchase_date,
              expires_date, revocation_date, recorded_at)
            VALUES (\(bind: transaction.environment), \(bind: transaction.transactionId), \(bind: transaction.originalTransactionId),
              \(bind: transaction.customer.bundleIdentifier), \(bind: transaction.customer.applicationUsername),
              \(bind: transaction.productIdentifier), \(bind: transaction.subscriptionGroupIdentifier), \(bind: transaction.price),
              \(bind: transaction.currency), \(bind: transaction.purchaseDate), \(bind: transaction.expiresDate),
              \(bind: transaction.revocationDate), \(bind: now))
            ON CONFLICT (environment, transaction_id) DO UPDATE SET
              revocation_date = COALESCE(subscription_transactions.revocation_date, excluded.revocation_date),
              expires_date = COALESCE(excluded.expires_date, subscription_transactions.expires_date),
              price = COALESCE(subscription_transactions.price, excluded.price),
              currency = COALESCE(subscription_transactions.currency, excluded.currency)
            """
        ).run()
    }

    func purgeSubscriptionTransactions(purchasedBefore: Date) async throws -> Int {
        try await backend.transaction { database in
            try await database.delete(from: "subscription_transactions")
                .where("purchase_date", .lessThan, SQLBind(purchasedBefore.unixMilliseconds)).returning("transaction_id").all().count
        }
    }

    private struct ExposedRow: Decodable, Sendable {
        var variant: String, customers: Int, mature: Int
    }

    private struct GroupRow: Decodable, Sendable {
        var variant: String, converted: Int, retained: Int
    }

    private struct RevenueRow: Decodable, Sendable {
        var variant: String, currency: String, milliunits: Int64, payers: Int, squares: Double, largest: Int64
    }

    private struct CustomersRow: Decodable, Sendable {
        var redeemed: Int, renewed: Int
    }

    /// A variant's count.
    private struct CountRow: Decodable, Sendable {
        var variant: String, customers: Int
    }
}
