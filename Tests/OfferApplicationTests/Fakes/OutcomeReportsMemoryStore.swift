import Foundation
import OfferModel
import OfferStore
import Synchronization

/// Outcome reports in memory: a fake of the ``OutcomeReports`` capability that answers empty reports and keeps the
/// queries it was asked, in order. `failing` makes every call throw, as an unreachable store would.
final class OutcomeReportsMemoryStore: OutcomeReports {
    struct Unreachable: Error {}

    private let asked = Mutex<[OutcomeQuery]>([])
    private let failure = Mutex(false)

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    /// The queries asked, oldest first.
    var queries: [OutcomeQuery] { asked.withLock { $0 } }

    private func ask(_ query: OutcomeQuery) throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
        asked.withLock { $0.append(query) }
    }

    private static let noRetention = RetentionOutcome(answered: 0, offers: 0, saved: 0)

    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport {
        try ask(query)
        return OutcomeReport(
            from: Date(timeIntervalSince1970: Double(query.from) / 1000),
            to: Date(timeIntervalSince1970: Double(query.to) / 1000),
            offers: [],
            retention: Self.noRetention
        )
    }

    func outcomeTotals(_ query: OutcomeQuery) async throws -> OutcomeTotals {
        try ask(query)
        return OutcomeTotals(issued: 0, redeemed: 0, attributed: 0, renewedAfterOffer: 0, refunded: 0, revenue: [], retention: Self.noRetention)
    }

    func outcomePage(_ query: OutcomeQuery, limit: Int, offset: Int) async throws -> OutcomePage {
        try ask(query)
        return OutcomePage(offers: [], rowCount: 0)
    }

    func dailyOutcomeTotals(_ query: OutcomeQuery) async throws -> [DailyOutcomeTotals] {
        try ask(query)
        return []
    }
}
