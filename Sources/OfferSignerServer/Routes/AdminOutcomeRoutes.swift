import AppStoreNotifications
import Foundation
import Hummingbird
import OfferApplication
import OfferModel

/// `GET /admin/outcomes`: what a window's offers became, as issue 27 and docs/outcomes.md describe the shape.
struct OutcomeAnswer: ResponseEncodable {
    var report: OutcomeReport
    func encode(to encoder: any Encoder) throws { try report.encode(to: encoder) }
}

/// `GET /admin/outcomes/daily`: the same report per UTC day.
struct DailyOutcomeAnswer: ResponseEncodable {
    var from: Date
    var to: Date
    var days: [OutcomeReport]
}

/// `/admin/outcomes`, `/admin/outcomes/daily`: offers issued and redeemed in a window, attributed to the
/// signatures this service issued, and what became of them (docs/outcomes.md).
///
/// Query: `from`, `to` (ISO 8601, `2026-11-01` or `2026-11-01T00:00:00Z`, or Unix milliseconds; default the 30 days
/// before now),
/// `bundleId`, `environment`.
struct AdminOutcomeRoutes {
    let outcomes: OutcomeReporting

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/outcomes") { request, _ -> OutcomeAnswer in
            let window = try Self.window(request)
            return OutcomeAnswer(
                report: try await outcomes.outcomeReport(
                    from: window.from,
                    to: window.to,
                    bundleIdentifier: window.bundleIdentifier,
                    environment: window.environment
                )
            )
        }
        group.get("/outcomes/daily") { request, _ -> DailyOutcomeAnswer in
            let window = try Self.window(request)
            let days = try await outcomes.dailyOutcomeReports(
                from: window.from,
                to: window.to,
                bundleIdentifier: window.bundleIdentifier,
                environment: window.environment
            )
            return DailyOutcomeAnswer(from: window.from, to: window.to, days: days)
        }
    }

    private struct Window {
        var from: Date, to: Date, bundleIdentifier: String?, environment: String?
    }

    /// The query's window; a parameter that is not what it should be is 400 naming it.
    private static func window(_ request: Request) throws -> Window {
        let parameters = request.uri.queryParameters
        func text(_ name: String) throws -> String? {
            guard let value = parameters[name[...]].map(String.init) else { return nil }
            guard (1...256).contains(value.utf8.count) else { throw APIError.invalidRequest(field: name, "\(name) is 1 to 256 characters.") }
            return value
        }
        func date(_ name: String) throws -> Date? {
            guard let value = try text(name) else { return nil }
            guard let date = parseDate(value) else {
                throw APIError.invalidRequest(
                    field: name,
                    "\(name) is an ISO 8601 date that exists (2026-11-01, 2026-11-01T00:00:00Z) or Unix milliseconds (1793491200000)."
                )
            }
            return date
        }
        let to = try date("to") ?? Date()
        let from = try date("from") ?? to.addingTimeInterval(-30 * 86_400)
        let environment = try text("environment")
        if let environment, !knownEnvironments.contains(environment) {
            throw APIError.invalidRequest(
                field: "environment",
                "environment is one of \(knownEnvironments.joined(separator: ", ")), as the App Store writes it."
            )
        }
        return Window(from: from, to: to, bundleIdentifier: try text("bundleId"), environment: environment)
    }

    /// The App Store's environments, as its signed data names them.
    static let knownEnvironments = [AppStoreEnvironment.production, .sandbox, .xcode, .localTesting].map(\.rawValue)

    /// `2026-11-01T00:00:00Z` (fractional seconds and offsets allowed), `2026-11-01` (midnight UTC) or Unix milliseconds.
    static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        if let milliseconds = Int64(text), (0...32_503_680_000_000).contains(milliseconds) {
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
        // Foundation's parser rolls fields over (2026-02-30 is 2 March, T25:00 the next day): refuse them first.
        guard fieldsInRange(Array(text.utf8)) else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
    }

    /// Whether an ISO 8601 text's month, day, hour, minute and second are within their ranges (the day within its
    /// month, leap years counted): `YYYY-MM-DD`, then optionally `THH:MM` and `:SS`; what follows is the parser's.
    static func fieldsInRange(_ bytes: [UInt8]) -> Bool {
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), (1...12).contains(month) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return false }
        guard bytes.count > 10 else { return true }
        guard let hour = number(11..<13), let minute = number(14..<16), hour <= 23, minute <= 59 else { return false }
        if bytes.count > 16, bytes[16] == UInt8(ascii: ":") {
            guard let second = number(17..<19), second <= 59 else { return false }
        }
        return true
    }
}
