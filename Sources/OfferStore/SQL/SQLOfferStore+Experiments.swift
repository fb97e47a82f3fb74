import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: experiments

    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool {
        try await backend.transaction { database in
            try await database.insert(into: "experiment_exposures")
                .columns("experiment_identifier", "bundle_identifier", "application_username", "variant", "exposed_at")
                .values(SQLBind(exposure.experimentIdentifier), SQLBind(exposure.customer.bundleIdentifier),
                        SQLBind(exposure.customer.applicationUsername), SQLBind(exposure.variant), SQLBind(exposure.exposedAt.unixMilliseconds))
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

    func experimentOutcomes(experimentIdentifier: String, productIdentifier: String, offers: [String: [String]]) async throws -> [String: ExperimentVariantOutcome] {
        // One read: the exposures and what the exposed did, seen at the same moment (redeemed never above exposed).
        try await backend.reading { database in
            var outcomes = try await Self.exposureCounts(experimentIdentifier, on: database).mapValues { ExperimentVariantOutcome(exposed: $0) }
            for (variant, identifiers) in offers where !identifiers.isEmpty && outcomes[variant] != nil {
                // Promotional offers only (offer type 2, or 5 for a retention offer): an offer code or a win-back
                // offer that shares an identifier is not this experiment's.
                let join: SQLQueryString = """
                    FROM experiment_exposures e JOIN redemptions r
                      ON r.bundle_identifier = e.bundle_identifier AND r.application_username = e.application_username
                    WHERE e.experiment_identifier = \(bind: experimentIdentifier) AND e.variant = \(bind: variant)
                      AND r.product_identifier = \(bind: productIdentifier) AND r.offer_identifier IN (\(binds: identifiers))
                      AND r.offer_type IN (2, 5) AND r.purchase_date >= e.exposed_at AND r.period_of IS NULL
                    """
                let customers = try await database.raw("""
                    SELECT COUNT(DISTINCT r.application_username) AS redeemed,
                      COUNT(DISTINCT CASE WHEN r.renewed_at IS NOT NULL THEN r.application_username END) AS renewed \(join)
                    """).first(decoding: CustomersRow.self)
                let revenue = try await database.raw("""
                    SELECT r.currency AS currency, CAST(SUM(r.price) AS BIGINT) AS milliunits \(join)
                      AND r.price IS NOT NULL AND r.currency IS NOT NULL AND r.refunded_at IS NULL
                    GROUP BY r.currency
                    """).all(decoding: RevenueRow.self)
                outcomes[variant]?.redeemed = customers?.redeemed ?? 0
                outcomes[variant]?.renewedAfterOffer = customers?.renewed ?? 0
                outcomes[variant]?.revenue = Dictionary(revenue.map { ($0.currency, $0.milliunits) }, uniquingKeysWith: +)
            }
            return outcomes
        }
    }

    private struct CustomersRow: Decodable, Sendable {
        var redeemed: Int, renewed: Int
    }

    private struct RevenueRow: Decodable, Sendable {
        var currency: String, milliunits: Int64
    }

    /// A variant's count.
    private struct CountRow: Decodable, Sendable {
        var variant: String, customers: Int
    }
}
