import Foundation
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning

/// The console's pages, drawn from the same service calls as the admin API (`/admin/keys`, `/admin/outcomes`,
/// `/admin/outcomes/daily`, `/admin/experiments`, `/admin/customers`, `/admin/audit`), and what the service knows of
/// its own health (``RequestTally``, the store's latest activity).
struct ConsolePages {
    /// The use cases the pages share with the admin API (key changes, the audit).
    let useCases: OfferSignerUseCases
    /// Who may sign in (the overview warns when the demo's public token is one).
    var adminTokens: BearerTokens = .none
    /// When the policy in force was loaded (it is read once, as the service starts).
    var policyLoadedAt = Date()

    /// `/console/offers`: the range's funnel (the totals, as the overview reads them), the daily chart of issued
    /// against redeemed with key and policy changes marked, and one page of the table per offer — the offers with the
    /// most signatures first, ``offersPerPage`` a page — with the report's figures, computed for the page's apps only.
    /// `page` is 1-based.
    func offers(_ session: ConsoleSession, range: ConsoleRange, page: Int = 1) async throws -> HTML {
        guard let logs = useCases.logs else {
            return ConsoleLayout.page(
                "Offers",
                session: session,
                current: "/console/offers",
                body: "<p class=\"note\">Outcomes need the customer store.</p>"
            )
        }
        // Five independent reads at once: the page waits for the slowest, not the sum.
        async let totalsRead = useCases.outcomes.outcomeTotals(from: range.from, to: range.to, bundleIdentifier: nil, environment: nil)
        async let pageRead = useCases.outcomes.outcomePage(
            from: range.from,
            to: range.to,
            bundleIdentifier: nil,
            environment: nil,
            limit: Self.offersPerPage,
            offset: (page - 1) * Self.offersPerPage
        )
        async let daysRead = useCases.outcomes.dailyOutcomeTotals(from: range.from, to: range.to, bundleIdentifier: nil, environment: nil)
        // The range's key and policy changes (the newest 500), read as such.
        async let eventsRead = logs.auditEvents(limit: 500, from: range.from, to: range.to, actions: Self.chartedActions)
        async let decisionsRead = useCases.health.decisionCounts(from: range.from, to: range.to)
        let (totals, shown, days, changes, decisions) = try await (totalsRead, pageRead, daysRead, eventsRead, decisionsRead)
        let rows: [[HTML]] = shown.offers.map { offer in
            let revenue = offer.revenue.map { ConsoleLayout.money($0.milliunits, $0.currency) }.joined(separator: ", ")
            return [
                offer.offerIdentifier.isEmpty ? "<span class=\"muted\">(introductory)</span>" : "\(offer.offerIdentifier)",
                "\(offer.productIdentifier)",
                "\(offer.issued)", "\(offer.redeemed)", "\(offer.refunded)", "\(revenue.isEmpty ? "–" : revenue)", "\(offer.renewedAfterOffer)",
                "\(offer.attributed)", "\(offer.customers)", ConsoleLayout.channel(offer.channel), "\(offer.bundleIdentifier)",
            ]
        }
        let funnel: HTML = """
            <div class="cards"><div class="card"><span>Issued</span><b data-metric="issued">\(totals.issued)</b></div>
            \(Self.refusalCard(decisions))
            <div class="card"><span>Redeemed</span><b data-metric="redeemed">\(totals.redeemed)</b></div>
            \(Self.redemptionRateCard(totals))
            <div class="card"><span>Renewed after the offer</span><b data-metric="renewed">\(totals.renewedAfterOffer)</b></div>
            <div class="card"><span>Refunded</span><b data-metric="refunded">\(totals.refunded)</b></div>
            \(Self.revenueCard(totals.revenue))</div>
            """
        let table: HTML =
            rows.isEmpty
            ? (shown.rowCount == 0
                ? "<p class=\"muted\">No offer was issued or redeemed in this range.</p>" : "<p class=\"muted\">No offer on this page.</p>")
            : ConsoleLayout.table(Self.offerColumns, rows, numeric: 2..<9)
        return ConsoleLayout.page(
            "Offers",
            session: session,
            current: "/console/offers",
            body: """
                \(range.selector(path: "/console/offers"))
                <p class="muted" id="range-title">\(range.title): \(ConsoleLayout.date(range.from)) to \(ConsoleLayout.date(range.to))</p>
                \(funnel)
                <h2>Issued and redeemed per day (UTC)</h2>
                \(ConsoleCharts.dailyBars(days, changes: changes.map { (at: $0.at, action: $0.action, target: $0.target) }))
                <h2>Per offer</h2>
                \(Self.pageLinks(range: range, page: page, rowCount: shown.rowCount, shown: shown.offers.count))
                \(table)
                <p><a href="/console/offers.csv?\(range.query)" download id="export">Export the whole table as CSV</a> (every offer of the range)</p>
                <p class="note" id="revenue-note">Revenue here is every redemption of the offer purchased in the range, whoever redeemed it. An \
                experiment's page counts only its exposed customers' redemptions within its window after each exposure, so the \
                two differ for the same offer (docs/experiments.md).</p>
                """
        )
    }

    /// Rows of the Offers table a page.
    static let offersPerPage = 50

    /// The page of the Offers table a query asks for: `page=N` from 1 (1 when absent); anything else is 400.
    static func offersPage(_ query: ConsoleForm) throws(APIError) -> Int {
        guard let text = query["page"], !text.isEmpty else { return 1 }
        guard text.utf8.count <= 6, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let page = Int(text), page >= 1 else {
            throw APIError.invalidRequest(field: "page", "page is a page number of the table, from 1 (at most 999999).")
        }
        return page
    }

    /// Which rows the page shows, of how many, with links to the previous and next pages (the range kept).
    static func pageLinks(range: ConsoleRange, page: Int, rowCount: Int, shown: Int) -> HTML {
        guard rowCount > 0 else { return .empty }
        let pages = (rowCount + offersPerPage - 1) / offersPerPage
        let first = (page - 1) * offersPerPage
        let what: HTML =
            shown == 0
            ? "Page \(page) is past the last page (\(pages)) of the \(rowCount) offers of the range"
            : "Offers \(first + 1)–\(first + shown) of \(rowCount), the most signatures first"
        var pieces: [HTML] = [what]
        if page > 1 {
            pieces += [" · ", "<a href=\"/console/offers?\(range.query)&amp;page=\(min(page - 1, pages))\" rel=\"prev\">← previous</a>"]
        }
        if page < pages { pieces += [" · ", "<a href=\"/console/offers?\(range.query)&amp;page=\(page + 1)\" rel=\"next\">next →</a>"] }
        return "<p class=\"muted\" id=\"offers-page\" data-rows=\"\(rowCount)\">\(pieces)</p>"
    }

    /// The Offers table's columns, the key ones first (a phone shows the first few without scrolling).
    static let offerColumns = [
        "Offer", "Product", "Issued", "Redeemed", "Refunded", "Revenue", "Renewed", "Attributed", "Customers", "Channel", "App",
    ]

    /// The audit actions the daily chart marks: key and policy changes.
    static let chartedActions: Set<String> = ["key.activate", "key.retire", "key.revoke", "policy.apply"]

    /// `/console/offers.csv`: the Offers table of the range as CSV (RFC 4180), one revenue column per currency.
    func offersCSV(range: ConsoleRange) async throws -> String {
        let report = try await useCases.outcomes.outcomeReport(from: range.from, to: range.to, bundleIdentifier: nil, environment: nil)
        let currencies = Self.revenueByCurrency(report.offers).map(\.currency)
        var lines = [
            (["app", "product", "offer", "channel", "issued", "customers", "redeemed", "attributed", "renewed", "refunded"]
                + currencies.map { "revenue_\($0)" }).map(Self.csvField).joined(separator: ",")
        ]
        for offer in report.offers {
            let revenue = currencies.map { currency in
                offer.revenue.first { $0.currency == currency }.map { String(format: "%.3f", Double($0.milliunits) / 1000) } ?? ""
            }
            lines.append(
                ([offer.bundleIdentifier, offer.productIdentifier, offer.offerIdentifier, ConsoleLayout.channelName(offer.channel)]
                    + [offer.issued, offer.customers, offer.redeemed, offer.attributed, offer.renewedAfterOffer, offer.refunded].map(String.init)
                    + revenue).map(Self.csvField).joined(separator: ",")
            )
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break; a leading `=`, `+`, `-` or `@` is prefixed
    /// with `'` so that a spreadsheet does not run it as a formula.
    static func csvField(_ value: String) -> String {
        var value = value
        if let first = value.first, "=+-@".contains(first), Double(value) == nil { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// What the policy in force holds, in a few words.
    static func policySummary(_ policy: OfferPolicy?) -> HTML {
        guard let policy else { return "<b class=\"muted\">none</b><span>no eligibility rules: every well-formed request is signed</span>" }
        let products = policy.apps.flatMap(\.products)
        let offers = products.map(\.offers.count).reduce(0, +)
        return "<b>\(offers) offers</b><span>\(policy.apps.count) apps, \(products.count) products, \(policy.experiments.count) experiments</span>"
    }

    /// The keys as `GET /admin/keys` lists them.
    static func keyTable(_ ring: KeyRing, counts: [String: Int]) -> HTML {
        let rows: [[HTML]] = ring.entries.map { entry in
            let state = ring.state(of: entry.key.keyIdentifier) ?? .retired
            return [
                "<code>\(entry.key.keyIdentifier)</code>",
                "<span class=\"\(state == .active ? "ok" : state == .revoked ? "bad" : "muted")\">\(state.rawValue)</span>",
                "<code>\(entry.key.fingerprint.prefix(23))</code>", "\(entry.source)", "\(ConsoleLayout.date(entry.loadedAt))",
                "\(counts[entry.key.keyIdentifier, default: 0])",
            ]
        }
        return ConsoleLayout.table(["Key", "State", "Fingerprint", "Source", "Loaded", "Signed here"], rows, numericFrom: 5)
    }
}
