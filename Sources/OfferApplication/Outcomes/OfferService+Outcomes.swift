import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferModel
import OfferStore

extension OfferService {
    /// The longest window of one report (a little more than a year), and of a daily report, in days.
    public static let outcomeReportMaximumDays = 366

    /// What the offers issued and redeemed in `[from, to)` became (`GET /admin/outcomes`, `offer-signer outcomes
    /// report`; docs/outcomes.md). Read and added up on the ``BackgroundLane``, where signing does not feel it.
    /// - Parameters:
    ///   - bundleIdentifier: one app (`nil`: every app).
    ///   - environment: one App Store environment for redemptions and retention answers (`nil`: every one).
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` (`from` not before `to`, a window longer than
    ///   ``outcomeReportMaximumDays``), 404 `unknown_app`, 503 `store_unavailable`.
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
        guard to.timeIntervalSince(from) <= Double(Self.outcomeReportMaximumDays) * 86_400 else {
            throw OfferServiceError.invalidRequest(
                field: "to",
                "A report covers at most \(Self.outcomeReportMaximumDays) days; ask for a shorter window."
            )
        }
        let earliest = Date(timeIntervalSince1970: 0)
        let latest = Date(timeIntervalSince1970: 32_503_680_000)
        guard from >= earliest, to <= latest else {
            throw OfferServiceError.invalidRequest(field: "from", "from and to must be between 1970 and 3000.")
        }
        if let bundleIdentifier { _ = try app(named: bundleIdentifier) }
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

    /// Records a retention answer, to follow whether the customer stayed (a renewal or auto-renew turned back on
    /// after it), and waits for the record at most `wait` (`.zero` for a fallback answered because the store is
    /// slow): the record goes on without it. See ``startRecordingRetentionOutcome(_:bundleIdentifier:product:answer:now:)``.
    func recordRetentionOutcome(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        product: String,
        answer: RealtimeResponseBody,
        now: Date,
        wait: Duration = .milliseconds(500)
    ) async {
        let recording = startRecordingRetentionOutcome(request, bundleIdentifier: bundleIdentifier, product: product, answer: answer, now: now)
        await Self.waitForRecording(recording, upTo: wait)
    }

    /// Starts recording a retention answer in a task of its own, never cancelled (an answer that stops waiting does
    /// not abandon the record), and returns it. A request without a usable original transaction, request
    /// identifier or environment is not followed (`nil`); a store failure is logged, never failing the answer.
    func startRecordingRetentionOutcome(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        product: String,
        answer: RealtimeResponseBody,
        now: Date
    ) -> Task<Void, Never>? {
        guard let store, let original = request.originalTransactionId, OutcomeFields.isTransactionIdentifier(original),
            let requestIdentifier = request.requestIdentifier?.lowercased(), OutcomeFields.isIdentifier(requestIdentifier),
            let environment = request.environment?.rawValue, OutcomeFields.isWord(environment, maximum: 32)
        else { return nil }
        let record = RetentionAnswerRecord(
            bundleIdentifier: bundleIdentifier,
            requestIdentifier: requestIdentifier,
            environment: environment,
            originalTransactionId: original,
            productIdentifier: product,
            offered: answer.promotionalOffer != nil,
            answeredAt: Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        )
        let logger = retentionLogger
        return Task {
            do {
                try await store.recordRetentionAnswer(record)
            } catch {
                logger.error("a retention answer was not recorded for the outcome report: the customer store failed")
            }
        }
    }

    /// Waits for a recording started by ``startRecordingRetentionOutcome(_:bundleIdentifier:product:answer:now:)``, at
    /// most `wait`.
    static func waitForRecording(_ recording: Task<Void, Never>?, upTo wait: Duration = .milliseconds(500)) async {
        guard let recording, wait > .zero else { return }
        _ = try? await withDeadline(wait) { await recording.value }
    }
}
