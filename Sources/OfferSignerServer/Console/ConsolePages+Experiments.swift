import Foundation
import OfferApplication
import OfferExperiments

extension ConsolePages {
    /// `/console/experiments`: the policy's experiments and their customers exposed so far.
    func experiments(_ session: ConsoleSession) async throws -> HTML {
        let summaries = try await useCases.experiments.experimentSummaries()
        let rows: [[HTML]] = summaries.map { summary in
            [
                """
                <a \
                href=\"/console/experiments/\(summary.id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "")\">\(summary.id)</a>
                """,
                "\(summary.bundleIdentifier)", "\(summary.productIdentifier)", "\(summary.channel)", "\(summary.metric)",
                summary.running ? "<span class=\"ok\">running</span>" : "<span class=\"muted\">not running</span>",
                "\(summary.variants.joined(separator: ", "))", "\(summary.exposed)",
            ]
        }
        let body: HTML =
            rows.isEmpty
            ? "<p class=\"muted\">The policy in force declares no experiment (docs/experiments.md says how to declare one).</p>"
            : ConsoleLayout.table(["Experiment", "App", "Product", "Channel", "Metric", "State", "Variants", "Exposed"], rows, numericFrom: 7)
        return ConsoleLayout.page("Experiments", session: session, current: "/console/experiments", body: body)
    }

    /// `/console/experiments/{id}`: the report of `GET /admin/experiments/{id}`, with the intervals drawn.
    func experiment(_ identifier: String, session: ConsoleSession) async throws -> HTML {
        let report = try await useCases.experiments.experimentReport(identifier)
        let rows: [[HTML]] = report.variants.map { variant in
            // One block per currency, a line each (the cell stays narrow): the sum, its payers and the mean, and with
            // metric revenue the difference to the reference.
            let revenue: [HTML] = variant.revenue.enumerated().map { index, revenue in
                let each = ConsoleLayout.money(Int64(revenue.perExposedCustomer.rounded()), revenue.currency)
                let difference: HTML =
                    revenue.difference
                    .map { "<br>\(Self.difference($0, currency: revenue.currency)) vs \(report.reference)" } ?? ""
                let sum = ConsoleLayout.money(revenue.milliunits, revenue.currency)
                return "\(index == 0 ? "" : "<br>" as HTML)\(sum)<br>\(revenue.payers) paying · \(each) each\(difference)"
            }
            return [
                "\(variant.name)\(variant.holdout ? " (holdout)" : "")\(variant.name == report.reference ? " · reference" : "")",
                "\(variant.answer ?? "–")", "\(variant.weight)", "\(variant.exposed)", "\(variant.mature)", "\(variant.maturing)",
                "\(variant.redeemed)", "\(variant.renewedAfterOffer)", "\(variant.converted)", "\(variant.retained)",
                "\(variant.rate.map { ConsoleLayout.percent($0.estimate) } ?? "–")",
                "\(variant.rate.map { "\(ConsoleLayout.percent($0.lower)) to \(ConsoleLayout.percent($0.upper))" } ?? "–")",
                revenue.isEmpty ? "–" : "\(revenue)",
            ]
        }
        let comparisons: [[HTML]] = report.comparisons.map { comparison in
            let verdict: HTML =
                switch comparison.verdict {
                case .better: "<b class=\"ok\">better</b>"
                case .worse: "<b class=\"bad\">worse</b>"
                case .noDifferenceYet: "<span class=\"muted\">no difference found yet</span>"
                }
            return [
                "\(comparison.variant) vs \(comparison.against)\(comparison.currency.map { " in \($0)" } ?? "")",
                comparison.currency.map { Self.difference(comparison.difference, currency: $0) } ?? Self.difference(comparison.difference), verdict,
                """
                <span data-comparison=\"\(comparison.variant)-\(comparison.against)\(comparison.currency.map { "-\($0)" } ?? "")\" \
                data-verdict=\"\(comparison.verdict.rawValue)\">\(comparison.summary)</span>
                """,
            ]
        }
        let comparisonTable: HTML =
            comparisons.isEmpty
            ? "<p class=\"muted\">Nothing compared yet: the note above says why.</p>"
            : ConsoleLayout.table(["Comparison", "Difference (interval)", "Verdict", "In words"], comparisons)
        let sampleRatio: HTML
        if let check = report.sampleRatio {
            let figures = "χ² \(String(format: "%.2f", check.chiSquare)), p \(String(format: "%.4f", check.pValue))"
            sampleRatio =
                check.mismatch
                ? "<b class=\"bad\">mismatch</b><span>\(figures)</span>"
                : "<b class=\"ok\">as the weights say</b><span>\(figures)</span>"
        } else {
            sampleRatio = "<b class=\"muted\">nobody exposed yet</b>"
        }
        let period = [report.start.map { "from \(ConsoleLayout.date($0))" }, report.end.map { "until \(ConsoleLayout.date($0))" }].compactMap { $0 }
            .joined(separator: " ")
        return ConsoleLayout.page(
            "Experiment \(report.id)",
            session: session,
            current: "/console/experiments",
            body: """
                <p>\(report.bundleIdentifier) · \(report.productIdentifier) · channel \(report.channel) · metric \(report.metric) ·
                \(report.running ? "running" : "not running") \(period) · \(report.plannedCustomers) customers per variant planned ·
                window \(report.windowDays) days · α \(report.alpha)</p>
                <div class="cards">
                <div class="card"><span>Readable</span><b class="\(report.readable ? "ok" : "bad")" \
                data-metric="readable">\(report.readable ? "yes" : "not yet")</b></div>
                <div class="card"><span>Sample ratio</span>\(sampleRatio)</div>
                <div \
                class="card"><span>Reference</span><b>\(report.reference)\(
                    report.variants.contains { $0.name == report.reference && $0.holdout } ? " (holdout)" : "")</b></div></div>
                <p class="note">\(report.note)</p>
                <h2>Comparisons on \(report.metric)\(report.metric == "revenue" ? " per mature customer, in each currency" : ""), each at \
                \(ConsoleLayout.percent(report.comparisonConfidenceLevel)) (\(report.correction) over \(report.comparisons.count))</h2>
                \(comparisonTable)
                <h2>Rates with their \(ConsoleLayout.percent(report.confidenceLevel)) always-valid intervals</h2>
                \(ConsoleCharts.intervals(report))
                <h2>Variants: every metric within \(report.windowDays) days of each exposure, over the mature customers</h2>
                \(ConsoleLayout.table(["Variant", "Answer", "Weight", "Exposed", "Mature", "Maturing", "Redeemed", "Renewed",
                                   "Converted", "Retained", "Rate",
                                   "Interval", "Realized revenue"], rows, numericFrom: 2))
                <p><a href="/console/experiments">← Every experiment</a></p>
                """
        )
    }

    /// A revenue difference per customer in milliunits, as the currency's units: "+0.64 USD (+0.12 to +1.16)".
    private static func difference(_ interval: ExperimentReport.Interval, currency: String) -> HTML {
        func units(_ milliunits: Double) -> String { String(format: "%+.2f", milliunits / 1_000) }
        let text = "\(units(interval.estimate)) \(currency) (\(units(interval.lower)) to \(units(interval.upper)))"
        return interval.excludesZero ? "<span class=\"ok\">\(text)</span>" : "\(text)"
    }

    private static func difference(_ interval: ExperimentReport.Interval?) -> HTML {
        guard let interval else { return "–" }
        let text =
            """
            \(String(format: "%+.1f", interval.estimate * 100)) pt (\(String(format: "%+.1f", interval.lower * 100)) to \
            \(String(format: "%+.1f", interval.upper * 100)))
            """
        return interval.excludesZero ? "<span class=\"ok\">\(text)</span>" : "\(text)"
    }
}
