import SQLKit

extension SQLOfferStore: DecisionLookbackSummary {
    /// One aggregate over the window's range of the primary key; only the decisions that kept too little are grouped.
    func decisionLookbacks(bundleIdentifiers: [String], since: Int64, until: Int64, below: Int64) async throws -> [DecisionLookback] {
        guard !bundleIdentifiers.isEmpty, since < until else { return [] }
        let rows = try await backend.reading { database in
            try await database.raw(
                """
                SELECT channel, bundle_identifier, product_identifier, offer_identifier, MIN(lookback_seconds) AS least
                FROM policy_decisions
                WHERE decided_at >= \(bind: since) AND decided_at < \(bind: until) AND lookback_seconds < \(bind: below)
                    AND bundle_identifier IN (\(binds: bundleIdentifiers))
                GROUP BY channel, bundle_identifier, product_identifier, offer_identifier
                """
            ).all(decoding: LookbackRow.self)
        }
        return rows.map {
            DecisionLookback(
                channel: $0.channel,
                bundleIdentifier: $0.bundleIdentifier,
                productIdentifier: $0.productIdentifier,
                offerIdentifier: $0.offerIdentifier,
                leastLookbackSeconds: $0.least
            )
        }
    }

    private struct LookbackRow: Decodable, Sendable {
        var channel: String, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, least: Int64

        private enum CodingKeys: String, CodingKey {
            case channel
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case least
        }
    }
}
