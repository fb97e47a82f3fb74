import Foundation
import Hummingbird
import OfferApplication
import OfferStore

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
    let service: OfferService

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/outcomes") { request, _ -> OutcomeAnswer in
            let window = try Self.window(request)
            return OutcomeAnswer(report: try await service.outcomeReport(
                from: window.from, to: window.to, bundleIdentifier: window.bundleIdentifier, environment: window.environment))
        }
        group.get("/outcomes/daily") { request, _ -> DailyOutcomeAnswer in
            let window = try Self.window(request)
            let days = try await service.dailyOutcomeReports(
                from: window.from, to: window.to, bundleIdentifier: window.bundleIdentifier, environment: window.environment)
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
                throw APIError.invalidRequest(field: name, "\(name) is an ISO 8601 date, e.g. 2026-11-01 or 2026-11-01T00:00:00Z.")
            }
            return date
        }
        let to = try date("to") ?? Date()
        let from = try date("from") ?? to.addingTimeInterval(-30 * 86_400)
        return Window(from: from, to: to, bundleIdentifier: try text("bundleId"), environment: try text("environment"))
    }

    /// `2026-11-01T00:00:00Z` (fractional seconds and offsets allowed), `2026-11-01` (midnight UTC) or Unix milliseconds.
    static func parseDate(_ text: String) -> Date? {
        guard text.utf8.count <= 40 else { return nil }
        if let milliseconds = Int64(text), (0...32_503_680_000_000).contains(milliseconds) {
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
    }
}
