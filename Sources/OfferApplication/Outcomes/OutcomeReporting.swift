import Foundation
import OfferModel
import OfferStore

/// The outcome reports (`GET /admin/outcomes`, `/admin/outcomes/daily`, the console's Offers page and overview;
/// docs/outcomes.md): a window checked (`from` before `to`, at most ``maximumDays``, an app this service serves, an App
/// Store environment), then read from the store's ``OutcomeReports``.
public struct OutcomeReporting: Sendable {
    /// The store's reports; `nil` (no store): every report is `store_unavailable`, once its window is checked.
    let store: (any OutcomeReports)?
    /// Throws 404 `unknown_app` for an app this service does not serve.
    let checkApp: @Sendable (String) throws(OfferServiceError) -> Void

    /// - Parameters:
    ///   - store: the store's reports, or `nil`.
    ///   - checkApp: throws ``OfferServiceError`` `unknown_app` for an app this service does not serve.
    public init(store: (any OutcomeReports)?, checkApp: @escaping @Sendable (String) throws(OfferServiceError) -> Void) {
        self.store = store
        self.checkApp = checkApp
    }

    /// The longest window of one report (a little more than a year), and of a daily report, in days.
    public static let maximumDays = 366

    /// What the offers issued and redeemed in `[from, to)` became (`GET /admin/outcomes`, `offer-signer outcomes
    /// report`; docs/outcomes.md). Read and added up on the ``BackgroundLane``, where signing does not feel it.
    /// - Parameters:
    ///   - bundleIdentifier: one app (`nil`: every app).
    ///   - environment: one App Store environment for redemptions and retention answers (`nil`: every one).
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` (`from` not before `to`, a window longer than
    ///   ``maximumDays``), 404 `unknown_app`, 503 `store_unavailable`.
    public func outcomeReport(from: Date, to: Date, bundleIdentifier: String?, environment: String?) async throws(OfferServiceError) -> OutcomeReport
    {
        let query = try outcomeQuery(from: from, to: to, bundleIdentifier: bundleIdentifier, environment: environment)
        guard let store else { throw OfferServiceError.storeUnavailable }
        return try await BackgroundLane.shared.run { () async throws(OfferServiceError) in
            try await storeCall { try await store.outcomeReport(query) }
        }
    }

    /// The figures of ``outcomeReport(from:to:bundleIdentifier:environment:)`` added up over every offer (the
    /// console's overview). Read where the caller runs, not on the ``BackgroundLane``: its cost is bounded (the
    /// rollups, and the log for at most two part days), and the lane's lowest priority would make a page wait
    /// whenever the cores are busy.
    /// - Throws: ``OfferServiceError`` as the report does.
    public func outcomeTotals(
        from: Date,
        to: Date,
        bundleIdentifier: String?,
        environment: String?
    )
        async throws(OfferServiceError) -> OutcomeTotals
    {
        let query = try outcomeQuery(from: from, to: to, bundleIdentifier: bundleIdentifier, environment: environment)
        guard let store else { throw OfferServiceError.storeUnavailable }
        return try await storeCall { try await store.outcomeTotals(query) }
    }

    /// The rows `offset..<offset + limit` of ``outcomeReport(from:to:bundleIdentifier:environment:)`` ordered by
    /// signatures issued (most first), with the report's figures, and how many rows the report has (the console's
    /// Offers table). Read on the ``BackgroundLane``, as the report is: the figures are computed for the page's apps
    /// (with one app, that is the whole report), so their reads must never hold a connection or a thread signing
    /// needs.
    /// - Throws: ``OfferServiceError`` as the report does, and 400 `invalid_request` for a limit outside 1…1,000 or
    ///   a negative offset.
    public func outcomePage(
        from: Date,
        to: Date,
        bundleIdentifier: String?,
        environment: String?,
        limit: Int,
        offset: Int
    )
        async throws(OfferServiceError) -> OutcomePage
    {
        let query = try outcomeQuery(from: from, to: to, bundleIdentifier: bundleIdentifier, environment: environment)
        guard (1...1_000).contains(limit), (0...1_000_000_000).contains(offset) else {
            throw OfferServiceError.invalidRequest(field: "page", "A page holds 1 to 1,000 rows and starts at row 0 or later.")
        }
        guard let store else { throw OfferServiceError.storeUnavailable }
        return try await BackgroundLane.shared.run { () async throws(OfferServiceError) in
            try await storeCall { try await store.outcomePage(query, limit: limit, offset: offset) }
        }
    }

    /// Each UTC day's signatures issued and redemptions, every offer added up, as
    /// ``dailyOutcomeReports(from:to:bundleIdentifier:environment:)`` counts them (the console's chart), from the daily
    /// rollups: read where the caller runs.
    public func dailyOutcomeTotals(
        from: Date,
        to: Date,
        bundleIdentifier: String?,
        environment: String?
    )
        async throws(OfferServiceError) -> [DailyOutcomeTotals]
    {
        let query = try outcomeQuery(from: from, to: to, bundleIdentifier: bundleIdentifier, environment: environment)
        guard let store else { throw OfferServiceError.storeUnavailable }
        return try await storeCall { try await store.dailyOutcomeTotals(query) }
    }

    /// The same report for every UTC day that `[from, to)` touches, in order (the first and last days cut to the
    /// window), on the ``BackgroundLane``, a day at a time.
    public func dailyOutcomeReports(
        from: Date,
        to: Date,
        bundleIdentifier: String?,
        environment: String?
    ) async throws(OfferServiceError) -> [OutcomeReport] {
        let query = try outcomeQuery(from: from, to: to, bundleIdentifier: bundleIdentifier, environment: environment)
        guard let store else { throw OfferServiceError.storeUnavailable }
        let day: Int64 = 86_400_000
        return try await BackgroundLane.shared.run { () async throws(OfferServiceError) in
            var reports: [OutcomeReport] = []
            var start = query.from
            while start < query.to {
                let end = min((start / day + 1) * day, query.to)
                var daily = query
                (daily.from, daily.to) = (start, end)
                reports.append(try await storeCall { try await store.outcomeReport(daily) })
                start = end
                await Task.yield()  // a day at a time: other background work gets its turn between days
            }
            return reports
        }
    }

    private func outcomeQuery(from: Date, to: Date, bundleIdentifier: String?, environment: String?) throws(OfferServiceError) -> OutcomeQuery {
        guard from < to else {
            throw OfferServiceError.invalidRequest(field: "from", "from must be before to (ISO 8601 dates, e.g. 2026-11-01T00:00:00Z).")
        }
        guard to.timeIntervalSince(from) <= Double(Self.maximumDays) * 86_400 else {
            throw OfferServiceError.invalidRequest(
                field: "to",
                "A report covers at most \(Self.maximumDays) days; ask for a shorter window."
            )
        }
        let earliest = Date(timeIntervalSince1970: 0)
        let latest = Date(timeIntervalSince1970: 32_503_680_000)
        guard from >= earliest, to <= latest else {
            throw OfferServiceError.invalidRequest(field: "from", "from and to must be between 1970 and 3000.")
        }
        if let bundleIdentifier { try checkApp(bundleIdentifier) }
        if let environment, !OutcomeFields.isWord(environment, maximum: 32) {
            throw OfferServiceError.invalidRequest(
                field: "environment",
                "environment is an App Store environment: Production, Sandbox, Xcode or LocalTesting."
            )
        }
        return OutcomeQuery(
            from: Int64((from.timeIntervalSince1970 * 1000).rounded(.down)),
            to: Int64((to.timeIntervalSince1970 * 1000).rounded(.down)),
            bundleIdentifier: bundleIdentifier,
            environment: environment
        )
    }
}
