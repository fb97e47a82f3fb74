import OfferModel
import SQLKit

/// The redemptions of a window as the outcome readers (the report, its page and ranking, the totals, the daily
/// totals) count them: the whole UTC days from `redemption_daily` (``RedemptionRollup``), a first or last day cut by
/// the window from the redemptions themselves (their time index) when that day has a redemption outside the window
/// (``IssuedRollup/split(from:to:anyOutside:)``), a window starting before 1970 from the redemptions alone.
extension SQLOfferStore {
    /// A derived table — `(…) redeemed_rows`, to follow `FROM` — of the window's redemptions counted per day, app,
    /// product, offer, offer type, channel and currency (`''` when none): `day, bundle_identifier, product_identifier,
    /// offer_identifier, offer_type, channel, currency, redeemed, attributed, renewed, refunded, priced, milliunits`
    /// (`milliunits`: the sum of the priced ones). A key may have several rows; the readers add them up.
    static func redemptionSource(_ query: OutcomeQuery, on database: any SQLDatabase) async throws -> SQLQueryString {
        var filters: SQLQueryString = ""
        if let bundle = query.bundleIdentifier { filters += " AND bundle_identifier = \(bind: bundle)" }
        if let environment = query.environment { filters += " AND environment = \(bind: environment)" }
        filters += pageClause(query)
        func logged(_ range: Range<Int64>) -> SQLQueryString {
            """
            SELECT purchase_date / 86400000 AS day, bundle_identifier, product_identifier, offer_identifier, offer_type,
                COALESCE(signature_channel, 'app') AS channel, COALESCE(currency, '') AS currency, COUNT(*) AS redeemed,
                COUNT(signature_nonce) AS attributed, COUNT(renewed_at) AS renewed, COUNT(refunded_at) AS refunded, COUNT(price) AS priced,
                CAST(COALESCE(SUM(price), 0) AS BIGINT) AS milliunits
            FROM redemptions
            WHERE purchase_date >= \(bind: range.lowerBound) AND purchase_date < \(bind: range.upperBound) AND period_of IS NULL\(filters)
            GROUP BY purchase_date / 86400000, bundle_identifier, product_identifier, offer_identifier, offer_type,
                COALESCE(signature_channel, 'app'), COALESCE(currency, '')
            """
        }
        var parts: [SQLQueryString] = []
        if query.from >= 0, query.from < query.to {
            let (days, cut) = try await IssuedRollup.split(from: query.from, to: query.to) { try await anyRedemption($0, on: database) }
            if let days {
                parts.append(
                    """
                    SELECT day, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency, redeemed, attributed,
                        renewed, refunded, priced, milliunits
                    FROM redemption_daily WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound) AND redeemed > 0\(filters)
                    """
                )
            }
            parts += cut.map(logged)
        } else {
            parts.append(logged(query.from..<max(query.from, query.to)))
        }
        var source: SQLQueryString = "("
        for (index, part) in parts.enumerated() { source += index == 0 ? part : " UNION ALL " + part }
        return source + ") redeemed_rows"
    }

    /// Whether any redemption was purchased in the range (the time index).
    static func anyRedemption(_ range: Range<Int64>, on database: any SQLDatabase) async throws -> Bool {
        let statement: SQLQueryString = """
            SELECT purchase_date FROM redemptions
            WHERE purchase_date >= \(bind: range.lowerBound) AND purchase_date < \(bind: range.upperBound) LIMIT 1
            """
        return try await database.raw(statement).first() != nil
    }
}
