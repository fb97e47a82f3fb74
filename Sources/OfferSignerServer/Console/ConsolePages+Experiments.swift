import Foundation
import OfferApplication

extension ConsolePages {
    /// `/console/experiments`: the policy's experiments and their customers exposed so far.
    func experiments(_ session: ConsoleSession) async throws -> HTML {
        let summaries = try await service.experimentSummaries()
        let rows: [[HTML]] = summaries.map { summary in
            [
                "<a href=\"/console/experiments/\(summary.id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "")\">\(summary.id)</a>",
                "\(summary.bundleIdentifier)", "\(summary.productIdentifier)", "\(summary.channel)", "\(summary.metric)",
                summary.running ? "<span class=\"ok\">running</span>" : "<span class=\"muted\">not running</span>",
                "\(summary.variants.joined(separator: ", "))", "\(summary.exposed)",
            ]
        }
        let body: HTML = rows.isEmpty
            ? "<p class=\"muted\">The policy in force declares no experiment (docs/experiments.md says how to declare one).</p>"
            : ConsoleLayout.table(["Experiment", "App", "Product", "Channel", "Metric", "State", "Variants", "Exposed"], rows, numericFrom: 7)
        return ConsoleLayout.page("Experiments", session: session, current: "/console/experiments", body: body)
    }

    /// `/console/experiments/{id}`: the report of `GET /admin/experiments/{id}`, with the intervals drawn.
    func experiment(_ identifier: String, session: ConsoleSession) async throws -> HTML {
        let report = try await service.experimentReport(identifier)
        let rows: [[HTML]] = report.variants.map { variant in
            let revenue = variant.revenue.map { ConsoleLayout.money($0.milliunits, $0.currency) }.joined(separator: ", ")
            return [
                "\(variant.name)\(variant.holdout ? " (holdout)" : "")\(variant.name == report.reference ? " · reference" : "")",
                "\(variant.answer ?? "–")", "\(variant.weight)", "\(variant.exposed)", "\(variant.redeemed)", "\(variant.renewedAfterOffer)",
                "\(variant.rate.map { ConsoleLayout.percent($0.estimate) } ?? "–")",
                "\(variant.rate.map { "\(ConsoleLayout.percent($0.lower)) to \(ConsoleLayout.percent($0.upper))" } ?? "–")",
                Self.difference(variant.difference), "\(revenue.isEmpty ? "–" : revenue)",
            ]
        }
        let sampleRatio: HTML
        if let check = report.sampleRatio {
            let figures = "χ² \(String(format: "%.2f", check.chiSquare)), p \(String(format: "%.4f", check.pValue))"
            sampleRatio = check.mismatch
                ? "<b class=\"bad\">mismatch</b><span>\(figures)</span>"
                : "<b class=\"ok\">as the weights say</b><span>\(figures)</span>"
        } else {
            sampleRatio = "<b class=\"muted\">nobody exposed yet</b>"
        }
        let period = [report.start.map { "from \(ConsoleLayout.date($0))" }, report.end.map { "until \(ConsoleLayout.date($0))" }].compactMap { $0 }.joined(separator: " ")
        return ConsoleLayout.page("Experiment \(report.id)", session: session, current: "/console/experiments", body: """
            <p>\(report.bundleIdentifier) · \(report.productIdentifier) · channel \(report.channel) · metric \(report.metric) ·
            \(report.running ? "running" : "not running") \(period) · \(report.plannedCustomers) customers per variant planned</p>
            <div class="cards">
            <div class="card"><span>Readable</span><b class="\(report.readable ? "ok" : "bad")" data-metric="readable">\(report.readable ? "yes" : "not yet")</b></div>
            <div class="card"><span>Sample ratio</span>\(sampleRatio)</div>
            <div class="card"><span>Reference</span><b>\(report.reference)\(report.variants.contains { $0.name == report.reference && $0.holdout } ? " (holdout)" : "")</b></div></div>
            <p class="note">\(report.note)</p>
            <h2>Rates with their \(ConsoleLayout.percent(report.confidenceLevel)) always-valid intervals</h2>
            \(ConsoleCharts.intervals(report))
            <h2>Variants</h2>
            \(ConsoleLayout.table(["Variant", "Answer", "Weight", "Exposed", "Redeemed", "Renewed", "Rate", "Interval", "Difference to the reference", "Revenue"], rows, numericFrom: 2))
            <p><a href="/console/experiments">← Every experiment</a></p>
            """)
    }

    private static func difference(_ interval: ExperimentReport.Interval?) -> HTML {
        guard let interval else { return "–" }
        let text = "\(String(format: "%+.1f", interval.estimate * 100)) pt (\(String(format: "%+.1f", interval.lower * 100)) to \(String(format: "%+.1f", interval.upper * 100)))"
        return interval.excludesZero ? "<span class=\"ok\">\(text)</span>" : "\(text)"
    }
}
