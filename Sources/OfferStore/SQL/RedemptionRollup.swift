import OfferModel
import SQLKit

/// `redemption_daily` (schema version 21): the redemptions the outcome report counts (`period_of IS NULL`, purchased
/// at or after 1970) per UTC day of purchase, environment, app, product, offer, offer type, channel (the attributed
/// signature's, `app` when none) and currency (`''` when none): how many, attributed, renewed after the offer,
/// refunded, priced, and the priced ones' sum. The console's Offers page and overview then read a row per day and
/// offer instead of every redemption of the range (``SQLOfferStore/redemptionSource(_:on:)``).
///
/// Every write of `redemptions` (a redemption recorded, a renewal, refund or expiry applied, a pay-as-you-go period
/// relinked) changes the rows of one subscription (original transaction and environment) only, under that
/// subscription's lock. So the write reads that subscription's contribution to the rollup before and after, in its
/// transaction, and adds the difference (``apply(before:after:on:)``): the subscription's writes never interleave, and
/// two subscriptions' additions to the same row commute. Rows whose counts all fall to zero stay, and are never read.
enum RedemptionRollup {
    /// A row of `redemption_daily`, and a subscription's contribution to it.
    struct Row: Decodable, Sendable {
        var day: Int64, environment: String, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String
        var offerType: Int64, channel: String, currency: String
        var redeemed: Int64, attributed: Int64, renewed: Int64, refunded: Int64, priced: Int64, milliunits: Int64
        enum CodingKeys: String, CodingKey {
            case day, environment
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case offerType = "offer_type"
            case channel, currency, redeemed, attributed, renewed, refunded, priced, milliunits
        }

        var key: Key {
            Key(
                day: day,
                environment: environment,
                bundleIdentifier: bundleIdentifier,
                productIdentifier: productIdentifier,
                offerIdentifier: offerIdentifier,
                offerType: offerType,
                channel: channel,
                currency: currency
            )
        }
        var counts: [Int64] { [redeemed, attributed, renewed, refunded, priced, milliunits] }
    }

    /// What identifies a row, in the primary key's order.
    struct Key: Hashable, Comparable {
        var day: Int64, environment: String, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String
        var offerType: Int64, channel: String, currency: String
        static func < (lhs: Key, rhs: Key) -> Bool {
            let (left, right) = ((lhs.day, lhs.environment, lhs.bundleIdentifier), (rhs.day, rhs.environment, rhs.bundleIdentifier))
            if left != right { return left < right }
            return (lhs.productIdentifier, lhs.offerIdentifier, lhs.offerType, lhs.channel, lhs.currency)
                < (rhs.productIdentifier, rhs.offerIdentifier, rhs.offerType, rhs.channel, rhs.currency)
        }
    }

    /// The key columns computed from a redemption, in the primary key's order.
    static let keyColumns = """
        purchase_date / 86400000, environment, bundle_identifier, product_identifier, offer_identifier, offer_type,
        COALESCE(signature_channel, 'app'), COALESCE(currency, '')
        """

    /// The counted columns computed from redemptions, in the table's order.
    static let countColumns = """
        COUNT(*), COUNT(signature_nonce), COUNT(renewed_at), COUNT(refunded_at), COUNT(price), CAST(COALESCE(SUM(price), 0) AS BIGINT)
        """

    /// The redemptions the rollup counts.
    static let counted = "period_of IS NULL AND purchase_date >= 0"

    /// One subscription's contribution to the rollup, as it stands in the caller's transaction.
    static func contribution(of originalTransactionId: String, environment: String, on database: any SQLDatabase) async throws -> [Row] {
        let statement: SQLQueryString = """
            SELECT purchase_date / 86400000 AS day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type,
                COALESCE(signature_channel, 'app') AS channel, COALESCE(currency, '') AS currency, COUNT(*) AS redeemed,
                COUNT(signature_nonce) AS attributed, COUNT(renewed_at) AS renewed, COUNT(refunded_at) AS refunded,
                COUNT(price) AS priced, CAST(COALESCE(SUM(price), 0) AS BIGINT) AS milliunits
            FROM redemptions
            WHERE original_transaction_id = \(bind: originalTransactionId) AND environment = \(bind: environment) AND \(unsafeRaw: counted)
            GROUP BY \(unsafeRaw: keyColumns)
            """
        return try await database.raw(statement).all(decoding: Row.self)
    }

    /// Adds the difference between a subscription's contribution after its writes and before them, in one
    /// statement, inside the caller's transaction. The rows go in key order, so two PostgreSQL transactions lock
    /// them in the same order.
    static func apply(before: [Row], after: [Row], on database: any SQLDatabase) async throws {
        var deltas: [Key: [Int64]] = [:]
        for row in after { deltas[row.key] = zip(deltas[row.key] ?? Array(repeating: 0, count: 6), row.counts).map { $0 + $1 } }
        for row in before { deltas[row.key] = zip(deltas[row.key] ?? Array(repeating: 0, count: 6), row.counts).map { $0 - $1 } }
        let changed = deltas.filter { $0.value.contains { $0 != 0 } }.sorted { $0.key < $1.key }
        guard !changed.isEmpty else { return }
        var statement: SQLQueryString = """
            INSERT INTO redemption_daily (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel,
                currency, redeemed, attributed, renewed, refunded, priced, milliunits) VALUES
            """
        for (index, entry) in changed.enumerated() {
            let key = entry.key
            statement += index == 0 ? " (" : ", ("
            statement += """
                \(bind: key.day), \(bind: key.environment), \(bind: key.bundleIdentifier), \(bind: key.productIdentifier), \
                \(bind: key.offerIdentifier), \(bind: key.offerType), \(bind: key.channel), \(bind: key.currency)
                """
            for count in entry.value { statement += ", \(bind: count)" }
            statement += ")"
        }
        statement += """
             ON CONFLICT (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency)
            DO UPDATE SET redeemed = redemption_daily.redeemed + excluded.redeemed,
                attributed = redemption_daily.attributed + excluded.attributed, renewed = redemption_daily.renewed + excluded.renewed,
                refunded = redemption_daily.refunded + excluded.refunded, priced = redemption_daily.priced + excluded.priced,
                milliunits = redemption_daily.milliunits + excluded.milliunits
            """
        try await database.run(statement)
    }

    /// Schema version 21: the table, filled from the redemptions as they stand.
    static func migration(bigint: SQLDataType) -> [SQLQueryString] {
        [
            """
            CREATE TABLE IF NOT EXISTS redemption_daily (
                day \(bigint) NOT NULL, environment TEXT NOT NULL, bundle_identifier TEXT NOT NULL, product_identifier TEXT NOT NULL,
                offer_identifier TEXT NOT NULL, offer_type \(bigint) NOT NULL, channel TEXT NOT NULL, currency TEXT NOT NULL,
                redeemed \(bigint) NOT NULL, attributed \(bigint) NOT NULL, renewed \(bigint) NOT NULL, refunded \(bigint) NOT NULL,
                priced \(bigint) NOT NULL, milliunits \(bigint) NOT NULL,
                PRIMARY KEY (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency))
            """,
            """
            INSERT INTO redemption_daily (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel,
                currency, redeemed, attributed, renewed, refunded, priced, milliunits)
            SELECT \(unsafeRaw: keyColumns), \(unsafeRaw: countColumns) FROM redemptions WHERE \(unsafeRaw: counted)
            GROUP BY \(unsafeRaw: keyColumns)
            """,
        ]
    }
}
