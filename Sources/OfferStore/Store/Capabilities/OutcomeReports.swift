import OfferModel

/// The outcome reports of a window (docs/outcomes.md), read from the log and its rollups.
public protocol OutcomeReports: Sendable {
    /// What the offers of a window became.
    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport

    /// The same window's figures added up over every offer, read from the rollups and the time indexes: a cost
    /// bounded by the window's days and at most two part days of the log, however many offers and apps there are.
    func outcomeTotals(_ query: OutcomeQuery) async throws -> OutcomeTotals

    /// The rows `offset..<offset + limit` of the window's report ordered by signatures issued (most first), each with
    /// the report's figures, and how many rows the report has: its figures computed for the page's apps only.
    func outcomePage(_ query: OutcomeQuery, limit: Int, offset: Int) async throws -> OutcomePage

    /// Every UTC day the window touches (the first and last cut to it), in order: signatures issued and redemptions,
    /// every offer added up, from the daily rollups (the log for a day cut by the window) and the redemptions' index.
    func dailyOutcomeTotals(_ query: OutcomeQuery) async throws -> [DailyOutcomeTotals]
}
