import Foundation
import OfferModel
import SQLKit

/// The outcome report: aggregate statements over one window — signatures issued and their distinct customers,
/// redemptions purchased and their revenue (``redemptionSource(_:on:)``), retention answers given
/// (`retention_answers_by_time`) — merged into one row per app, product, offer, offer type and channel.
///
/// Signatures are counted from the rollups (``IssuedRollup``) for the whole UTC days of the window, and from the
/// log for the part of a day at either end; a window without a whole day is counted from the log alone.
extension SQLOfferStore {
    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport {
        let plan = try await rollupPlan(query)
        if let plan { try await rollUpCustomerDays(plan.days) }
        return try await report(query, plan: plan)
    }

    /// The report of a window whose plan is made and whose customer days are rolled.
    func report(_ query: OutcomeQuery, plan: RollupPlan?) async throws -> OutcomeReport {
        try await backend.reading { database in
            var rows: [RowKey: OfferOutcome] = [:]
            func row(_ key: RowKey) -> OfferOutcome {
                rows[key]
                    ?? OfferOutcome(
                        bundleIdentifier: key.bundle,
                        productIdentifier: key.product,
                        offerIdentifier: key.offer,
                        offerType: key.offerType,
                        channel: key.channel
                    )
            }
            let issuedRows =
                if let plan {
                    try await Self.issuedFromRollups(plan, query, on: database)
                } else {
                    try await database.raw(Self.issuedStatement(query)).all(decoding: IssuedRow.self)
                }
            for issued in issuedRows {
                let key = RowKey(
                    bundle: issued.bundleIdentifier,
                    product: issued.productIdentifier,
                    offer: issued.offerIdentifier,
                    offerType: 2,
                    channel: issued.channel == "retention" ? "retention" : "app"
                )
                var outcome = row(key)
                outcome.issued += issued.issued
                outcome.customers += issued.customers
                rows[key] = outcome
            }
            // Counts and revenue in one pass over the window's redemptions: a row per offer and currency.
            for redeemed in try await database.raw(Self.redemptionStatement(query, on: database)).all(decoding: RedeemedRow.self) {
                let key = RowKey(
                    bundle: redeemed.bundleIdentifier,
                    product: redeemed.productIdentifier,
                    offer: redeemed.offerIdentifier,
                    offerType: Int32(clamping: redeemed.offerType),
                    channel: redeemed.channel
                )
                var outcome = row(key)
                outcome.redeemed += redeemed.redeemed
                outcome.attributed += redeemed.attributed
                outcome.renewedAfterOffer += redeemed.renewed
                outcome.refunded += redeemed.refunded
                if let currency = redeemed.currency, let milliunits = redeemed.milliunits {
                    outcome.revenue.append(Revenue(currency: currency, milliunits: milliunits))
                }
                rows[key] = outcome
            }
            // A page's rows (`pageBundles`) need no retention figures.
            let retention =
                query.pageBundles != nil
                ? nil
                : try await database.raw(Self.retentionStatement(query)).first(decoding: RetentionTotalsRow.self)
            let offers = rows.sorted { $0.key < $1.key }.map { entry in
                var outcome = entry.value
                outcome.revenue.sort { $0.currency < $1.currency }
                return outcome
            }
            return OutcomeReport(
                from: Date(unixMilliseconds: query.from),
                to: Date(unixMilliseconds: query.to),
                offers: offers,
                retention: RetentionOutcome(answered: retention?.answered ?? 0, offers: retention?.offers ?? 0, saved: retention?.saved ?? 0)
            )
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
        statement += pageClause(query, onLog: true)
        statement += " GROUP BY bundle_identifier, product_identifier, offer_identifier, channel"
        return statement
    }

    /// ` AND bundle_identifier IN (…)` for a page's apps, else nothing; `onLog`: as `|| ''`, on the log's time index.
    static func pageClause(_ query: OutcomeQuery, onLog: Bool = false) -> SQLQueryString {
        guard let bundles = query.pageBundles else { return "" }
        guard !bundles.isEmpty else { return " AND 1 = 0" }
        return onLog ? " AND bundle_identifier || '' IN (\(binds: bundles))" : " AND bundle_identifier IN (\(binds: bundles))"
    }

    /// How the window's signatures are counted: whole UTC days `days` from the rollups, the parts `front` (before
    /// the first whole day) and `back` (after the last) from the log. A part day with no signature outside the
    /// window counts as a whole day (a window ending now: today so far).
    struct RollupPlan {
        var days: ClosedRange<Int64>, front: Range<Int64>?, back: Range<Int64>?
    }

    /// The plan of a window, or `nil` when it holds no whole day.
    func rollupPlan(_ query: OutcomeQuery) async throws -> RollupPlan? {
        let day = IssuedRollup.day
        guard query.from >= 0 else { return nil }
        var first = (query.from + day - 1) / day
        var last = query.to / day - 1
        guard first <= last else { return nil }
        var front = query.from < first * day ? query.from..<(first * day) : nil
        var back = (last + 1) * day < query.to ? ((last + 1) * day)..<query.to : nil
        let outside = try await backend.reading { [front, back, first, last] database in
            (
                front: front == nil ? true : try await Self.anySignature((first - 1) * day..<query.from, on: database),
                back: back == nil ? true : try await Self.anySignature(query.to..<((last + 2) * day), on: database)
            )
        }
        if !outside.front { (first, front) = (first - 1, nil) }
        if !outside.back { (last, back) = (last + 1, nil) }
        return RollupPlan(days: first...last, front: front, back: back)
    }

    static func anySignature(_ range: Range<Int64>, on database: any SQLDatabase) async throws -> Bool {
        let statement: SQLQueryString = """
            SELECT timestamp FROM issued_signatures WHERE timestamp >= \(bind: range.lowerBound) AND timestamp < \(bind: range.upperBound)
              AND format <> 'introductory-eligibility' LIMIT 1
            """
        return try await database.raw(statement).first() != nil
    }

    /// Issued signatures and distinct customers per app, product, offer and channel: the whole days' from the
    /// rollups (the customers of `[A, B]`: the customer days of `[A, B]` whose previous day is before `A`), each part
    /// day's from the log — its customers counted only when they had no signature in the window before it (the
    /// back part) or in the whole days (the front part).
    private static func issuedFromRollups(_ plan: RollupPlan, _ query: OutcomeQuery, on database: any SQLDatabase) async throws -> [IssuedRow] {
        let (first, last) = (plan.days.lowerBound, plan.days.upperBound)
        var bundle: SQLQueryString = query.bundleIdentifier.map { " AND bundle_identifier = \(bind: $0)" } ?? ""
        bundle += pageClause(query)
        var rows = try await database.raw(
            """
            SELECT bundle_identifier, product_identifier, offer_identifier, channel, CAST(SUM(issued) AS BIGINT) AS issued,
                CAST(0 AS BIGINT) AS customers
            FROM issued_daily WHERE day >= \(bind: first) AND day <= \(bind: last)\(bundle)
            GROUP BY bundle_identifier, product_identifier, offer_identifier, channel
            """
        ).all(decoding: IssuedRow.self)
        rows += try await database.raw(
            """
            SELECT bundle_identifier, product_identifier, offer_identifier, channel, CAST(0 AS BIGINT) AS issued,
                CAST(SUM(customers) AS BIGINT) AS customers
            FROM issued_customer_days WHERE day >= \(bind: first) AND day <= \(bind: last) AND previous_day < \(bind: first)\(bundle)
            GROUP BY bundle_identifier, product_identifier, offer_identifier, channel
            """
        ).all(decoding: IssuedRow.self)
        let wholeDays = (first * IssuedRollup.day)..<((last + 1) * IssuedRollup.day)
        for (part, before) in [(plan.front, wholeDays), (plan.back, query.from..<wholeDays.upperBound)] {
            guard let part else { continue }
            var statement: SQLQueryString = """
                SELECT bundle_identifier, product_identifier, offer_identifier, channel, COUNT(*) AS issued,
                    COUNT(DISTINCT CASE WHEN NOT EXISTS (
                        SELECT 1 FROM issued_signatures s
                        WHERE s.bundle_identifier = r.bundle_identifier AND s.application_username = r.application_username
                          AND s.timestamp >= \(bind: before.lowerBound) AND s.timestamp < \(bind: before.upperBound)
                          AND s.product_identifier = r.product_identifier AND s.offer_identifier = r.offer_identifier
                          AND s.channel = r.channel AND s.format <> 'introductory-eligibility')
                      THEN application_username END) AS customers
                FROM issued_signatures r
                WHERE timestamp >= \(bind: part.lowerBound) AND timestamp < \(bind: part.upperBound) AND format <> 'introductory-eligibility'
                """
            if let bundle = query.bundleIdentifier { statement += " AND bundle_identifier || '' = \(bind: bundle)" }
            statement += pageClause(query, onLog: true)
            statement += " GROUP BY bundle_identifier, product_identifier, offer_identifier, channel"
            rows += try await database.raw(statement).all(decoding: IssuedRow.self)
        }
        return rows
    }

    /// Redemptions purchased in the window, with the channel of the signature they are attributed to (`app` when none),
    /// per currency: the counts (added up across currencies) and the revenue (`NULL` for a currency without prices),
    /// from the daily rollup and the cut days (``redemptionSource(_:on:)``).
    private static func redemptionStatement(_ query: OutcomeQuery, on database: any SQLDatabase) async throws -> SQLQueryString {
        var statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, offer_type, channel,
                CAST(SUM(redeemed) AS BIGINT) AS redeemed, CAST(SUM(attributed) AS BIGINT) AS attributed,
                CAST(SUM(renewed) AS BIGINT) AS renewed, CAST(SUM(refunded) AS BIGINT) AS refunded,
                NULLIF(currency, '') AS currency, CASE WHEN SUM(priced) > 0 THEN CAST(SUM(milliunits) AS BIGINT) END AS milliunits
            FROM
            """
        statement += " " + (try await redemptionSource(query, on: database))
        statement += " GROUP BY bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency"
        return statement
    }

    static func retentionStatement(_ query: OutcomeQuery) -> SQLQueryString {
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
    struct RowKey: Hashable, Comparable {
        var bundle: String, product: String, offer: String, offerType: Int32, channel: String
        static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.bundle, lhs.product, lhs.offer, lhs.offerType, lhs.channel) < (rhs.bundle, rhs.product, rhs.offer, rhs.offerType, rhs.channel)
        }
    }

    private struct IssuedRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, channel: String, issued: Int, customers: Int
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case channel, issued, customers
        }
    }

    private struct RedeemedRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, offerType: Int64, channel: String
        var redeemed: Int, attributed: Int, renewed: Int, refunded: Int
        var currency: String?, milliunits: Int64?
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case offerType = "offer_type"
            case channel, redeemed, attributed, renewed, refunded, currency, milliunits
        }
    }

    struct RetentionTotalsRow: Decodable {
        var answered: Int, offers: Int, saved: Int
    }
}
