import Foundation
import OfferModel
import SQLKit

/// The outcome report: four aggregate statements over one window — signatures issued (by their time, the log's
/// unique index), redemptions purchased and their revenue (`redemptions_by_time`), retention answers given
/// (`retention_answers_by_time`) — merged into one row per app, product, offer, offer type and channel.
extension SQLOfferStore {
    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport {
        try await backend.reading { database in
            var rows: [RowKey: OfferOutcome] = [:]
            func row(_ key: RowKey) -> OfferOutcome {
                rows[key] ?? OfferOutcome(bundleIdentifier: key.bundle, productIdentifier: key.product, offerIdentifier: key.offer, offerType: key.offerType, channel: key.channel)
            }
            for issued in try await database.raw(Self.issuedStatement(query)).all(decoding: IssuedRow.self) {
                let key = RowKey(bundle: issued.bundleIdentifier, product: issued.productIdentifier, offer: issued.offerIdentifier,
                                 offerType: 2, channel: issued.channel == "retention" ? "retention" : "app")
                var outcome = row(key)
                outcome.issued += issued.issued
                outcome.customers += issued.customers
                rows[key] = outcome
            }
            for redeemed in try await database.raw(Self.redemptionStatement(query)).all(decoding: RedeemedRow.self) {
                let key = RowKey(bundle: redeemed.bundleIdentifier, product: redeemed.productIdentifier, offer: redeemed.offerIdentifier,
                                 offerType: Int32(clamping: redeemed.offerType), channel: redeemed.channel)
                var outcome = row(key)
                outcome.redeemed += redeemed.redeemed
                outcome.attributed += redeemed.attributed
                outcome.renewedAfterOffer += redeemed.renewed
                outcome.refunded += redeemed.refunded
                rows[key] = outcome
            }
            for revenue in try await database.raw(Self.revenueStatement(query)).all(decoding: RevenueRow.self) {
                let key = RowKey(bundle: revenue.bundleIdentifier, product: revenue.productIdentifier, offer: revenue.offerIdentifier,
                                 offerType: Int32(clamping: revenue.offerType), channel: revenue.channel)
                var outcome = row(key)
                outcome.revenue.append(Revenue(currency: revenue.currency, milliunits: revenue.milliunits))
                rows[key] = outcome
            }
            let retention = try await database.raw(Self.retentionStatement(query)).first(decoding: RetentionRow.self)
            let offers = rows.sorted { $0.key < $1.key }.map { entry in
                var outcome = entry.value
                outcome.revenue.sort { $0.currency < $1.currency }
                return outcome
            }
            return OutcomeReport(
                from: Date(unixMilliseconds: query.from), to: Date(unixMilliseconds: query.to), offers: offers,
                retention: RetentionOutcome(answered: retention?.answered ?? 0, offers: retention?.offers ?? 0, saved: retention?.saved ?? 0))
        }
    }

    private static func issuedStatement(_ query: OutcomeQuery) -> SQLQueryString {
        var statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, channel, COUNT(*) AS issued,
                COUNT(DISTINCT application_username) AS customers
            FROM issued_signatures
            WHERE timestamp >= \(bind: query.from) AND timestamp < \(bind: query.to) AND format <> 'introductory-eligibility'
            """
        // `|| ''` keeps SQLite's planner off the customer index (bundle first), which reads every signature the app
        // was ever issued, and on the time range: 0.65 s instead of 0.82 s for a million signatures, a window of
        // 167,000, and the gap grows with the log (docs/outcomes.md).
        if let bundle = query.bundleIdentifier { statement += " AND bundle_identifier || '' = \(bind: bundle)" }
        statement += " GROUP BY bundle_identifier, product_identifier, offer_identifier, channel"
        return statement
    }

    /// Redemptions purchased in the window, with the channel of the signature they are attributed to (`app` when none).
    private static func redemptionStatement(_ query: OutcomeQuery) -> SQLQueryString {
        var statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app') AS channel,
                COUNT(*) AS redeemed, COUNT(signature_nonce) AS attributed, COUNT(renewed_at) AS renewed, COUNT(refunded_at) AS refunded
            FROM redemptions
            """
        statement += window(query)
        statement += " GROUP BY bundle_identifier, product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app')"
        return statement
    }

    private static func revenueStatement(_ query: OutcomeQuery) -> SQLQueryString {
        var statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app') AS channel,
                currency, CAST(SUM(price) AS BIGINT) AS milliunits
            FROM redemptions
            """
        statement += window(query)
        statement += """
             AND price IS NOT NULL AND currency IS NOT NULL
            GROUP BY bundle_identifier, product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app'), currency
            """
        return statement
    }

    private static func window(_ query: OutcomeQuery) -> SQLQueryString {
        var clause: SQLQueryString = " WHERE purchase_date >= \(bind: query.from) AND purchase_date < \(bind: query.to)"
        if let bundle = query.bundleIdentifier { clause += " AND bundle_identifier = \(bind: bundle)" }
        if let environment = query.environment { clause += " AND environment = \(bind: environment)" }
        return clause
    }

    private static func retentionStatement(_ query: OutcomeQuery) -> SQLQueryString {
        var statement: SQLQueryString = """
            SELECT COUNT(*) AS answered, COALESCE(SUM(offered), 0) AS offers, COUNT(saved_at) AS saved
            FROM retention_answers
            WHERE answered_at >= \(bind: query.from) AND answered_at < \(bind: query.to)
            """
        if let bundle = query.bundleIdentifier { statement += " AND bundle_identifier = \(bind: bundle)" }
        if let environment = query.environment { statement += " AND environment = \(bind: environment)" }
        return statement
    }

    /// What identifies a row of the report, in its order.
    private struct RowKey: Hashable, Comparable {
        var bundle: String, product: String, offer: String, offerType: Int32, channel: String
        static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.bundle, lhs.product, lhs.offer, lhs.offerType, lhs.channel) < (rhs.bundle, rhs.product, rhs.offer, rhs.offerType, rhs.channel)
        }
    }

    private struct IssuedRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, channel: String, issued: Int, customers: Int
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier", productIdentifier = "product_identifier", offerIdentifier = "offer_identifier"
            case channel, issued, customers
        }
    }

    private struct RedeemedRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, offerType: Int64, channel: String
        var redeemed: Int, attributed: Int, renewed: Int, refunded: Int
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier", productIdentifier = "product_identifier", offerIdentifier = "offer_identifier"
            case offerType = "offer_type", channel, redeemed, attributed, renewed, refunded
        }
    }

    private struct RevenueRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, offerType: Int64, channel: String
        var currency: String, milliunits: Int64
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier", productIdentifier = "product_identifier", offerIdentifier = "offer_identifier"
            case offerType = "offer_type", channel, currency, milliunits
        }
    }

    private struct RetentionRow: Decodable {
        var answered: Int, offers: Int, saved: Int
    }
}
