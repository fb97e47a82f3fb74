import Foundation
import OfferApplication
import OfferModel

/// Charts drawn on the server as SVG: no script, no external resource. Every mark carries its value in a
/// `data-value` attribute and a `<title>` (shown on hover, read by screen readers, checked by the tests).
enum ConsoleCharts {
    /// One pair of bars per day: signatures issued and offers redeemed (every offer summed); each key or policy change
    /// in `changes` (the audit's) a dashed line on its day, with `data-change` (the action) and a `<title>`.
    static func dailyBars(_ days: [DailyOutcomeTotals], changes: [(at: Date, action: String, target: String)] = []) -> HTML {
        let values = days.map { day in (day: String(day.from.formatted(.iso8601).prefix(10)), issued: day.issued, redeemed: day.redeemed) }
        guard !values.isEmpty else { return "<p class=\"muted\">No days in the window.</p>" }
        let maximum = max(1, values.map { max($0.issued, $0.redeemed) }.max() ?? 1)
        let (width, height, top, bottom, left) = (720.0, 260.0, 16.0, 34.0, 40.0)
        let plot = height - top - bottom
        let slot = (width - left) / Double(values.count)
        let barWidth = max(1, slot * 0.4)
        func y(_ value: Int) -> Double { top + plot * (1 - Double(value) / Double(maximum)) }
        var marks: [HTML] = []
        for (index, value) in values.enumerated() {
            let x = left + Double(index) * slot + slot * 0.1
            for (series, count, offset) in [("issued", value.issued, 0.0), ("redeemed", value.redeemed, barWidth)] {
                marks.append(
                    """
                    <rect class="\(series)" x="\(format(x + offset))" y="\(format(y(count)))" width="\(format(barWidth))" \
                    height="\(format(top + plot - y(count)))" \
                    data-day="\(value.day)" data-series="\(series)" data-value="\(count)"><title>\(value.day): \(count) \(series)</title></rect>
                    """
                )
            }
            if index % max(1, values.count / 6) == 0 {
                marks.append("<text x=\"\(format(x))\" y=\"\(format(height - 10))\">\(value.day.dropFirst(5))</text>")
            }
        }
        for change in changes {
            let day = String(change.at.formatted(.iso8601).prefix(10))
            guard let index = values.firstIndex(where: { $0.day == day }) else { continue }
            let x = left + Double(index) * slot + slot * 0.5
            let what =
                change.action == "policy.apply" ? "policy applied: \(change.target.prefix(12))" : "\(change.action.dropFirst(4)) \(change.target)"
            marks.append(
                """
                <g data-change="\(change.action)" data-day="\(day)"><title>\(ConsoleLayout.date(change.at)): \(what)</title>\
                <line class="change" x1="\(format(x))" y1="\(format(top))" x2="\(format(x))" y2="\(format(top + plot))"/>\
                <text class="change-label" x="\(format(x + 3))" \
                y="\(format(top + 10))">\(change.action.hasPrefix("key.") ? "key" : "policy")</text></g>
                """
            )
        }
        let axis: HTML = """
            <line class="axis" x1="\(format(left))" y1="\(format(top + plot))" x2="\(format(width))" y2="\(format(top + plot))"/>
            <text x="0" y="\(format(top + 6))">\(maximum)</text><text x="0" y="\(format(top + plot))">0</text>
            """
        return """
            <p class="legend"><span class="issued">issued</span><span class="redeemed">redeemed</span>\
            \(changes.isEmpty ? HTML.empty : "<span class=\"change\">- - key or policy change</span>" as HTML)</p>
            <svg class="chart" id="daily-chart" viewBox="0 0 \(format(width)) \(format(height))" role="img" aria-label="Signatures issued and \
            offers redeemed per day">
            \(axis)\(marks)</svg>
            """
    }

    /// Each variant's rate with its interval as an error bar, on a 0–100 % axis.
    static func intervals(_ report: ExperimentReport) -> HTML {
        let variants = report.variants.filter { $0.rate != nil }
        guard !variants.isEmpty else {
            return "<p class=\"muted\">The metric \(report.metric) is not a rate: its differences are in the comparisons.</p>"
        }
        let upper = min(1, max(0.05, (variants.compactMap { $0.rate?.upper }.max() ?? 1) * 1.1))
        let (width, rowHeight, left, right) = (720.0, 40.0, 190.0, 20.0)
        let height = rowHeight * Double(variants.count) + 26
        func x(_ rate: Double) -> Double { left + (width - left - right) * min(max(rate, 0), upper) / upper }
        var marks: [HTML] = []
        for (index, variant) in variants.enumerated() {
            guard let rate = variant.rate else { continue }
            let y = 14 + rowHeight * Double(index)
            let title =
                """
                \(variant.name): \(ConsoleLayout.percent(rate.estimate)) (\(ConsoleLayout.percent(rate.lower)) to \
                \(ConsoleLayout.percent(rate.upper)))
                """
            marks.append(
                """
                <text x="0" y="\(format(y + 4))">\(variant.name)\(variant.holdout ? " (holdout)" : "")</text>
                <g data-variant="\(variant.name)" data-value="\(rate.estimate)" data-lower="\(rate.lower)" \
                data-upper="\(rate.upper)"><title>\(title)</title>
                <line class="interval" x1="\(format(x(rate.lower)))" y1="\(format(y))" x2="\(format(x(rate.upper)))" y2="\(format(y))"/>
                <line class="interval" x1="\(format(x(rate.lower)))" y1="\(format(y - 6))" x2="\(format(x(rate.lower)))" y2="\(format(y + 6))"/>
                <line class="interval" x1="\(format(x(rate.upper)))" y1="\(format(y - 6))" x2="\(format(x(rate.upper)))" y2="\(format(y + 6))"/>
                <circle class="estimate" cx="\(format(x(rate.estimate)))" cy="\(format(y))" r="4"/></g>
                """
            )
        }
        let axisY = height - 12
        return """
            <svg class="chart" id="interval-chart" viewBox="0 0 \(format(width)) \(format(height))" role="img" aria-label="Each variant's rate with \
            its 95 % interval">
            <line class="axis" x1="\(format(left))" y1="\(format(axisY - 8))" x2="\(format(width - right))" y2="\(format(axisY - 8))"/>
            <text x="\(format(left))" y="\(format(axisY + 4))">0 %</text><text x="\(format(width - right - 60))" \
            y="\(format(axisY + 4))">\(ConsoleLayout.percent(upper))</text>
            \(marks)</svg>
            """
    }

    /// A coordinate with one decimal.
    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
