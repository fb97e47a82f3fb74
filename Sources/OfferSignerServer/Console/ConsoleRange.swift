import Foundation

/// The time range of the console's outcome pages, from the query: `days=7|30|90` (that many UTC days, today so far
/// the last; 30 when nothing is given), or `from=YYYY-MM-DD&to=YYYY-MM-DD` (UTC days, both included; `to` at most today).
struct ConsoleRange: Sendable, Equatable {
    var from: Date
    var to: Date
    /// The preset chosen, `nil` for a custom range.
    var days: Int?

    /// The presets the selector offers.
    static let presets = [7, 30, 90]
    /// The longest custom range, in days.
    static let maximumDays = 366
    static let defaultDays = 30

    init(from: Date, to: Date, days: Int?) {
        (self.from, self.to, self.days) = (from, to, days)
    }

    /// The range a query asks for; a value that is not one of the above is 400 saying what is.
    init(query: ConsoleForm, now: Date = Date()) throws(APIError) {
        let fromText = query["from"] ?? ""
        let toText = query["to"] ?? ""
        guard !fromText.isEmpty || !toText.isEmpty else {
            let text = query["days"] ?? ""
            guard text.isEmpty || Self.presets.contains(Int(text) ?? 0) else {
                throw APIError.invalidRequest(field: "days", "days is 7, 30 or 90; for another range give from and to (2026-11-01).")
            }
            let days = Int(text) ?? Self.defaultDays
            // Whole UTC days, today's so far the last: the daily chart's bars, and the store reads each day's
            // rollup rows instead of the log for a day the range would cut (docs/console.md).
            let today = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
            self.init(from: Date(timeIntervalSince1970: today - Double(days - 1) * 86_400), to: now, days: days)
            return
        }
        func day(_ name: String, _ text: String) throws(APIError) -> Date {
            guard text.utf8.count == 10, let date = AdminOutcomeRoutes.parseDate(text) else {
                throw APIError.invalidRequest(field: name, "\(name) is a day written 2026-11-01 (UTC).")
            }
            return date
        }
        let from = try day("from", fromText.isEmpty ? toText : fromText)
        let toDay = try day("to", toText.isEmpty ? fromText : toText)
        let to = min(toDay.addingTimeInterval(86_400), now)
        guard from < to else { throw APIError.invalidRequest(field: "from", "from is a day before to, and not after today.") }
        guard to.timeIntervalSince(from) <= Double(Self.maximumDays) * 86_400 else {
            throw APIError.invalidRequest(field: "to", "A range is at most \(Self.maximumDays) days; narrow from and to.")
        }
        self.init(from: from, to: to, days: nil)
    }

    /// The query that asks for this range again (for links: the CSV export).
    var query: String {
        if let days { return "days=\(days)" }
        return "from=\(Self.day(from))&to=\(Self.day(to.addingTimeInterval(-1)))"
    }

    /// The range in words, as a heading says it.
    var title: String {
        days.map { "Last \($0) days" } ?? "\(Self.day(from)) to \(Self.day(to.addingTimeInterval(-1)))"
    }

    /// `2026-11-28`, UTC.
    static func day(_ date: Date) -> String { String(date.formatted(.iso8601).prefix(10)) }

    /// The selector: a link per preset (the current one marked) and a from–to form, each back to `path`.
    func selector(path: String) -> HTML {
        let links: [HTML] = Self.presets.map { preset in
            preset == days
                ? "<a href=\"\(path)?days=\(preset)\" aria-current=\"true\">\(preset) days</a>"
                : "<a href=\"\(path)?days=\(preset)\">\(preset) days</a>"
        }
        return """
            <form class="inline range" method="get" action="\(path)" id="range"><span class="muted">Range:</span> \(links)
            <label>from <input type="date" name="from" value="\(Self.day(from))" required></label>
            <label>to <input type="date" name="to" value="\(Self.day(to.addingTimeInterval(-1)))" required></label>
            <button type="submit">Show</button></form>
            """
    }
}
