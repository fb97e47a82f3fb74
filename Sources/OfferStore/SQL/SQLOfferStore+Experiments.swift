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
        let rows = try await backend.reading { database in
            try await database.select().column("variant").column(SQLFunction("COUNT", args: SQLLiteral.all), as: "customers")
                .from("experiment_exposures").where("experiment_identifier", .equal, experimentIdentifier)
                .groupBy("variant")
                .all(decoding: CountRow.self)
        }
        return Dictionary(rows.map { ($0.variant, $0.customers) }, uniquingKeysWith: +)
    }

    /// A variant's count.
    private struct CountRow: Decodable, Sendable {
        var variant: String, customers: Int
    }
}
