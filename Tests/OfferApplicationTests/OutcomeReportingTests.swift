import Foundation
import OfferApplication
import OfferModel
import OfferStore
import Testing

/// ``OutcomeReporting`` over an in-memory fake of the ``OutcomeReports`` capability: the window a report may cover,
/// the app and environment it names, the page bounds, and how the daily report cuts the window into UTC days.
@Suite struct OutcomeReportingTests {
    let reports = OutcomeReportsMemoryStore()
    let start = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15T08:00:00Z

    var reporting: OutcomeReporting {
        OutcomeReporting(store: reports) { (bundleIdentifier: String) throws(OfferServiceError) -> Void in
            guard bundleIdentifier == "com.example.app" else { throw OfferServiceError(.unknownApp, "Not served.") }
        }
    }

    /// The error a call threw, or `nil` when it returned.
    func failure(_ body: () async throws -> Void) async -> OfferServiceError? {
        do {
            try await body()
            return nil
        } catch let error as OfferServiceError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func aReportReadsTheWindowInMilliseconds() async throws {
        _ = try await reporting.outcomeReport(from: start, to: start + 3_600, bundleIdentifier: "com.example.app", environment: "Sandbox")
        #expect(
            reports.queries == [
                OutcomeQuery(from: 1_800_000_000_000, to: 1_800_003_600_000, bundleIdentifier: "com.example.app", environment: "Sandbox")
            ]
        )
    }

    @Test func aWindowThatEndsBeforeItStartsIsRefused() async throws {
        let error = await failure { _ = try await reporting.outcomeReport(from: start, to: start, bundleIdentifier: nil, environment: nil) }
        #expect(error?.code == .invalidRequest && error?.field == "from")
        #expect(reports.queries.isEmpty)
    }

    @Test func aWindowLongerThanTheMaximumIsRefusedAndTheMaximumIsNot() async throws {
        let longest = TimeInterval(OutcomeReporting.maximumDays) * 86_400
        let error = await failure {
            _ = try await reporting.outcomeReport(from: start, to: start + longest + 1, bundleIdentifier: nil, environment: nil)
        }
        #expect(error?.code == .invalidRequest && error?.field == "to")
        _ = try await reporting.outcomeTotals(from: start, to: start + longest, bundleIdentifier: nil, environment: nil)
        #expect(reports.queries.count == 1)
    }

    @Test func aWindowBefore1970IsRefused() async throws {
        let error = await failure {
            _ = try await reporting.outcomeReport(from: Date(timeIntervalSince1970: -10), to: start, bundleIdentifier: nil, environment: nil)
        }
        #expect(error?.code == .invalidRequest)
    }

    @Test func anAppThisServiceDoesNotServeIsUnknownApp() async throws {
        let error = await failure { _ = try await reporting.outcomeReport(from: start, to: start + 60, bundleIdentifier: "other", environment: nil) }
        #expect(error?.code == .unknownApp)
        #expect(reports.queries.isEmpty)
    }

    @Test(arguments: ["", "Prod uction", String(repeating: "P", count: 33)])
    func anEnvironmentThatIsNotAWordIsRefused(_ environment: String) async throws {
        let error = await failure {
            _ = try await reporting.outcomeReport(from: start, to: start + 60, bundleIdentifier: nil, environment: environment)
        }
        #expect(error?.code == .invalidRequest && error?.field == "environment")
    }

    @Test(arguments: [(0, 0), (1_001, 0), (10, -1)])
    func aPageOutsideItsBoundsIsRefused(_ page: (limit: Int, offset: Int)) async throws {
        let error = await failure {
            _ = try await reporting.outcomePage(
                from: start,
                to: start + 60,
                bundleIdentifier: nil,
                environment: nil,
                limit: page.limit,
                offset: page.offset
            )
        }
        #expect(error?.code == .invalidRequest && error?.field == "page")
        #expect(reports.queries.isEmpty)
    }

    @Test func theDailyReportCutsTheWindowAtEachUTCMidnight() async throws {
        // From 08:00 on the first day to 12:00 on the third: three days, the first and last cut to the window.
        let end = start + 2 * 86_400 + 4 * 3_600
        let days = try await reporting.dailyOutcomeReports(from: start, to: end, bundleIdentifier: nil, environment: nil)
        #expect(days.count == 3)
        let firstMidnight: Int64 = 1_800_057_600_000  // 2027-01-16T00:00:00Z
        #expect(reports.queries.map(\.from) == [1_800_000_000_000, firstMidnight, firstMidnight + 86_400_000])
        #expect(reports.queries.map(\.to) == [firstMidnight, firstMidnight + 86_400_000, 1_800_187_200_000])
    }

    @Test func withoutAStoreAWellFormedReportIsStoreUnavailable() async throws {
        let storeless = OutcomeReporting(store: nil) { (_: String) throws(OfferServiceError) -> Void in }
        let error = await failure { _ = try await storeless.outcomeReport(from: start, to: start + 60, bundleIdentifier: nil, environment: nil) }
        #expect(error?.code == .storeUnavailable)
        let malformed = await failure { _ = try await storeless.outcomeReport(from: start, to: start, bundleIdentifier: nil, environment: nil) }
        #expect(malformed?.code == .invalidRequest)
    }

    @Test func aStoreThatFailsIsStoreUnavailable() async throws {
        reports.failing(true)
        let error = await failure { _ = try await reporting.outcomeTotals(from: start, to: start + 60, bundleIdentifier: nil, environment: nil) }
        #expect(error?.code == .storeUnavailable)
    }
}
