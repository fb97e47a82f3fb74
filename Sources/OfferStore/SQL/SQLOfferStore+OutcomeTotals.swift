import Foundation
import OfferModel
import SQLKit

/// The outcome totals (the console's overview): the report's figures added up in the database, a handful of rows
/// whatever the number of apps and offers. Signatures come from `issued_daily` for every UTC day the window
/// touches, except a first or last day cut by the window that has signatures outside it: that part is counted from
/// the log (the time index), so the log is read for at most two part days. Redemptions are counted as the report
/// counts them (``redemptionSource(_:on:)``), retention answers through their time index.
extension SQLOfferStore {
    func outcomeTotals(_ query: OutcomeQuery) async throws -> OutcomeTotals {
        try await backend.reading { database in
            let issued = try await Self.issuedTotal(query, on: database)
            let source = try await Self.redemptionSource(query, on: database)
            let redeemed: SQLQueryString = """
                SELECT CAST(COALESCE(SUM(redeemed), 0) AS BIGINT) AS redeemed, CAST(COALESCE(SUM(attributed), 0) AS BIGINT) AS attributed,
                    CAST(COALESCE(SUM(renewed), 0) AS BIGINT) AS renewed, CAST(COALESCE(SUM(refunded), 0) AS BIGINT) AS refunded
                FROM \(source)
                """
            let redemptions = try await database.raw(redeemed).first(decoding: RedeemedTotals.self)
            let revenue: SQLQueryString = """
                SELECT currency, CAST(SUM(milliunits) AS BIGINT) AS milliunits FROM \(source)
                WHERE currency <> '' GROUP BY currency HAVING SUM(priced) > 0 ORDER BY currency
                """
            let amounts = try await database.raw(revenue).all(decoding: CurrencyAmount.self)
            let retention = try await database.raw(Self.retentionStatement(query)).first(decoding: RetentionTotalsRow.self)
            return OutcomeTotals(
                issued: issued,
                redeemed: redemptions?.redeemed ?? 0,
                attributed: redemptions?.attributed ?? 0,
                renewedAfterOffer: redemptions?.renewed ?? 0,
                refunded: redemptions?.refunded ?? 0,
                revenue: amounts.map { Revenue(currency: $0.currency, milliunits: $0.milliunits) },
                retention: RetentionOutcome(answered: retention?.answered ?? 0, offers: retention?.offers ?? 0, saved: retention?.saved ?? 0)
            )
        }
    }

    /// The signatures issued in the window: whole days (and a cut day with nothing outside the window, such as today
    /// so far) from `issued_daily`, a cut day with signatures outside the window from the log.
    static func issuedTotal(_ query: OutcomeQuery, on database: any SQLDatabase) async throws -> Int {
        guard query.from >= 0, query.from < query.to else { return 0 }
        let (days, parts) = try await IssuedRollup.split(from: query.from, to: query.to) { try await anySignature($0, on: database) }
        var total = 0
        for part in parts { total += try await loggedCount(part, query, on: database) }
        guard let days else { return total }
        var statement: SQLQueryString = """
            SELECT CAST(COALESCE(SUM(issued), 0) AS BIGINT) AS issued FROM issued_daily
            WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound)
            """
        if let bundle = query.bundleIdentifier { statement += " AND bundle_identifier = \(bind: bundle)" }
        return total + (try await database.raw(statement).first(decoding: Issued.self)?.issued ?? 0)
    }

    /// The signatures of part of a day, from the log's time index.
    static func loggedCount(_ range: Range<Int64>, _ query: OutcomeQuery, on database: any SQLDatabase) async throws -> Int {
        var statement: SQLQueryString = """
            SELECT COUNT(*) AS issued FROM issued_signatures
            WHERE timestamp >= \(bind: range.lowerBound) AND timestamp < \(bind: range.upperBound) AND format <> 'introductory-eligibility'
            """
        // `|| ''`: on the time index, not the customer index (bundle first), as the report's statement does.
        if let bundle = query.bundleIdentifier { statement += " AND bundle_identifier || '' = \(bind: bundle)" }
        return try await database.raw(statement).first(decoding: Issued.self)?.issued ?? 0
    }

    private struct Issued: Decodable {
        var issued: Int
    }

    private struct RedeemedTotals: Decodable {
        var redeemed: Int, attributed: Int, renewed: Int, refunded: Int
    }

    private struct CurrencyAmount: Decodable {
        var currency: String, milliunits: Int64
    }
}
