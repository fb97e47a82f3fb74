import Foundation
import OfferModel
import SQLKit

/// A page of the outcome report (the console's Offers table) and the daily totals (its chart), without reading the
/// whole report. The page: one statement ranks the report's rows by signatures issued — the rollups' daily rows for
/// the whole days, the log for the part days, the redemptions' keys with none — and returns only the page's keys;
/// the report's own statements then run for the page's apps alone, and the page keeps its keys' rows. So every
/// figure is the report's, computed as the report computes it.
extension SQLOfferStore {
    func outcomePage(_ query: OutcomeQuery, limit: Int, offset: Int) async throws -> OutcomePage {
        let plan = try await rollupPlan(query)
        // The ranking and the customer days' roll check at once: the report below needs the days rolled anyway.
        async let ranking = backend.reading { database in
            try await database.raw(try await Self.rankingStatement(query, plan: plan, limit: limit, offset: offset, on: database))
                .all(decoding: RankedRow.self)
        }
        if let plan { try await rollUpCustomerDays(plan.days) }
        let ranked = try await ranking
        let rowCount: Int
        if let first = ranked.first {
            rowCount = first.rowCount
        } else {
            // A page past the end: the number of rows from the ranking alone (its first row), no report.
            rowCount =
                offset == 0
                ? 0
                : try await backend.reading { database in
                    try await database.raw(try await Self.rankingStatement(query, plan: plan, limit: 1, offset: 0, on: database))
                        .first(decoding: RankedRow.self)?.rowCount
                        ?? 0
                }
        }
        guard !ranked.isEmpty else { return OutcomePage(offers: [], rowCount: rowCount) }
        var narrowed = query
        narrowed.pageBundles = Array(Set(ranked.map(\.bundleIdentifier))).sorted()
        let report = try await report(narrowed, plan: plan)
        var rows: [RowKey: OfferOutcome] = [:]
        for offer in report.offers {
            rows[
                RowKey(
                    bundle: offer.bundleIdentifier,
                    product: offer.productIdentifier,
                    offer: offer.offerIdentifier,
                    offerType: offer.offerType,
                    channel: offer.channel
                )
            ] = offer
        }
        let offers = ranked.compactMap { row in
            rows[
                RowKey(
                    bundle: row.bundleIdentifier,
                    product: row.productIdentifier,
                    offer: row.offerIdentifier,
                    offerType: Int32(clamping: row.offerType),
                    channel: row.channel
                )
            ]
        }
        return OutcomePage(offers: offers, rowCount: rowCount)
    }

    /// The report's keys with their signatures issued, most first, `limit` from `offset`, each with the number of keys.
    private static func rankingStatement(
        _ query: OutcomeQuery,
        plan: RollupPlan?,
        limit: Int,
        offset: Int,
        on database: any SQLDatabase
    ) async throws -> SQLQueryString {
        let channel: SQLQueryString = "CASE WHEN channel = 'retention' THEN 'retention' ELSE 'app' END"
        let columns: SQLQueryString = "bundle_identifier, product_identifier, offer_identifier, 2 AS offer_type, "
        var parts: [SQLQueryString] = []
        func logged(_ range: Range<Int64>) -> SQLQueryString {
            var part: SQLQueryString =
                "SELECT " + columns + channel + """
                     AS channel, CAST(1 AS BIGINT) AS issued FROM issued_signatures
                    WHERE timestamp >= \(bind: range.lowerBound) AND timestamp < \(bind: range.upperBound) AND format <> 'introductory-eligibility'
                    """
            if let bundle = query.bundleIdentifier { part += " AND bundle_identifier || '' = \(bind: bundle)" }
            return part
        }
        if let plan {
            var daily: SQLQueryString =
                "SELECT " + columns + channel + """
                     AS channel, issued FROM issued_daily WHERE day >= \(bind: plan.days.lowerBound) AND day <= \(bind: plan.days.upperBound)
                    """
            if let bundle = query.bundleIdentifier { daily += " AND bundle_identifier = \(bind: bundle)" }
            parts.append(daily)
            if let front = plan.front { parts.append(logged(front)) }
            if let back = plan.back { parts.append(logged(back)) }
        } else {
            parts.append(logged(query.from..<query.to))
        }
        var redeemed: SQLQueryString =
            "SELECT bundle_identifier, product_identifier, offer_identifier, offer_type, channel, CAST(0 AS BIGINT) AS issued FROM "
        redeemed += try await redemptionSource(query, on: database)
        parts.append(redeemed)
        var statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, offer_type, channel, CAST(SUM(issued) AS BIGINT) AS issued,
                COUNT(*) OVER () AS row_count FROM (
            """
        for (index, part) in parts.enumerated() { statement += index == 0 ? part : " UNION ALL " + part }
        statement += """
            ) keyed GROUP BY bundle_identifier, product_identifier, offer_identifier, offer_type, channel
            ORDER BY SUM(issued) DESC, bundle_identifier, product_identifier, offer_identifier, offer_type, channel
            LIMIT \(bind: limit) OFFSET \(bind: offset)
            """
        return statement
    }

    func dailyOutcomeTotals(_ query: OutcomeQuery) async throws -> [DailyOutcomeTotals] {
        let day = IssuedRollup.day
        guard query.from >= 0, query.from < query.to else { return [] }
        let first = query.from / day
        let last = (query.to - 1) / day
        return try await backend.reading { database in
            var issuedStatement: SQLQueryString = """
                SELECT day, CAST(SUM(issued) AS BIGINT) AS count FROM issued_daily WHERE day >= \(bind: first) AND day <= \(bind: last)
                """
            if let bundle = query.bundleIdentifier { issuedStatement += " AND bundle_identifier = \(bind: bundle)" }
            issuedStatement += " GROUP BY day"
            var issued: [Int64: Int] = [:]
            for row in try await database.raw(issuedStatement).all(decoding: DayCount.self) { issued[row.day] = row.count }
            // A day cut by the window is counted from the log, as its report counts it.
            for cut in Set([first, last]) where query.from > cut * day || query.to < (cut + 1) * day {
                var part = query
                (part.from, part.to) = (max(query.from, cut * day), min(query.to, (cut + 1) * day))
                issued[cut] = try await Self.loggedCount(part.from..<part.to, part, on: database)
            }
            var redeemedStatement: SQLQueryString = "SELECT day, CAST(SUM(redeemed) AS BIGINT) AS count FROM "
            redeemedStatement += try await Self.redemptionSource(query, on: database)
            redeemedStatement += " GROUP BY day"
            var redeemed: [Int64: Int] = [:]
            for row in try await database.raw(redeemedStatement).all(decoding: DayCount.self) { redeemed[row.day] = row.count }
            return (first...last).map { index in
                DailyOutcomeTotals(
                    from: Date(unixMilliseconds: max(query.from, index * day)),
                    issued: issued[index] ?? 0,
                    redeemed: redeemed[index] ?? 0
                )
            }
        }
    }

    private struct RankedRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, offerType: Int64, channel: String
        var issued: Int, rowCount: Int
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case offerType = "offer_type"
            case channel, issued
            case rowCount = "row_count"
        }
    }

    private struct DayCount: Decodable {
        var day: Int64, count: Int
    }
}
