import Foundation
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferSigning
import OfferStore

/// The console's pages, drawn from the same service calls as the admin API (`/admin/keys`, `/admin/outcomes`,
/// `/admin/outcomes/daily`, `/admin/experiments`, `/admin/customers`, `/admin/audit`).
struct ConsolePages {
    let service: OfferService
    let keyManager: KeyManager?
    /// When the policy in force was loaded (it is read once, as the service starts).
    var policyLoadedAt = Date()

    /// The window of the outcome pages: the 30 days before now, as `GET /admin/outcomes` defaults to.
    static let window: TimeInterval = 30 * 86_400

    /// `/console`: health, keys, signatures today and this week, the last 30 days' outcomes.
    func overview(_ session: ConsoleSession) async throws -> HTML {
        let now = Date()
        var health: [HTML] = []
        if let store = service.store {
            let reachable = (try? await store.ping()) != nil
            health.append(reachable ? "<b class=\"ok\">reachable</b>" : "<b class=\"bad\">unreachable</b>")
        } else {
            health.append("<b class=\"muted\">none configured</b>")
        }
        let ring = await keyManager?.keyRing ?? service.keys.current
        let active: HTML = ring.activeKeyIdentifier.map { "<code>\($0)</code>" } ?? "<span class=\"bad\">none</span>"
        var body: HTML = """
            <h2>Health</h2>
            <div class="cards"><div class="card"><span>Customer store</span>\(health)</div>
            <div class="card"><span>Active key</span><b>\(active)</b></div>
            <div class="card"><span>Keys</span><b>\(ring.entries.count)</b></div>
            <div class="card"><span>Policy in force</span>\(Self.policySummary(service.policy))</div></div>
            \(Self.keyTable(ring, counts: service.signatureCountsByKey))
            """
        guard service.store != nil else {
            return ConsoleLayout.page("Overview", session: session, current: "/console", body: "\(body)<p class=\"note\">Outcomes need the customer store (\(ConfigurationVariable.databaseUrl.environmentName)).</p>")
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        let today = calendar.startOfDay(for: now)
        let issuedToday = try await service.outcomeReport(from: today, to: now, bundleIdentifier: nil, environment: nil).offers.map(\.issued).reduce(0, +)
        let issuedWeek = try await service.outcomeReport(from: now.addingTimeInterval(-7 * 86_400), to: now, bundleIdentifier: nil, environment: nil)
            .offers.map(\.issued).reduce(0, +)
        let report = try await service.outcomeReport(from: now.addingTimeInterval(-Self.window), to: now, bundleIdentifier: nil, environment: nil)
        let totals = Self.totals(report.offers)
        body = """
            \(body)
            <h2>Signatures</h2>
            <div class="cards"><div class="card"><span>Today (UTC)</span><b data-metric="issued-today">\(issuedToday)</b></div>
            <div class="card"><span>Last 7 days</span><b data-metric="issued-week">\(issuedWeek)</b></div></div>
            <h2>Last 30 days</h2>
            <div class="cards">
            <div class="card"><span>Issued</span><b data-metric="issued">\(totals.issued)</b></div>
            <div class="card"><span>Redeemed</span><b data-metric="redeemed">\(totals.redeemed)</b></div>
            <div class="card"><span>Attributed to a signature</span><b data-metric="attributed">\(totals.attributed)</b></div>
            <div class="card"><span>Retention answered</span><b data-metric="retention-answered">\(report.retention.answered)</b></div>
            <div class="card"><span>Retention saved</span><b data-metric="retention-saved">\(report.retention.saved)</b></div>
            <div class="card"><span>Save rate</span><b data-metric="save-rate">\(ConsoleLayout.percent(report.retention.saveRate))</b></div>
            </div>
            <p><a href="/console/offers">Every offer, and the daily chart →</a></p>
            """
        return ConsoleLayout.page("Overview", session: session, current: "/console", body: body)
    }

    /// `/console/offers`: the 30-day outcomes per offer and the daily chart of issued against redeemed.
    func offers(_ session: ConsoleSession) async throws -> HTML {
        guard service.store != nil else {
            return ConsoleLayout.page("Offers", session: session, current: "/console/offers", body: "<p class=\"note\">Outcomes need the customer store.</p>")
        }
        let now = Date()
        let from = now.addingTimeInterval(-Self.window)
        let report = try await service.outcomeReport(from: from, to: now, bundleIdentifier: nil, environment: nil)
        let days = try await service.dailyOutcomeReports(from: from, to: now, bundleIdentifier: nil, environment: nil)
        let rows: [[HTML]] = report.offers.map { offer in
            let revenue = offer.revenue.map { ConsoleLayout.money($0.milliunits, $0.currency) }.joined(separator: ", ")
            return [
                "\(offer.bundleIdentifier)", "\(offer.productIdentifier)", offer.offerIdentifier.isEmpty ? "<span class=\"muted\">(introductory)</span>" : "\(offer.offerIdentifier)",
                "\(offer.channel)", "\(offer.issued)", "\(offer.customers)", "\(offer.redeemed)", "\(offer.attributed)",
                "\(offer.renewedAfterOffer)", "\(offer.refunded)", "\(revenue.isEmpty ? "–" : revenue)",
            ]
        }
        let totals = Self.totals(report.offers)
        let funnel: HTML = """
            <div class="cards"><div class="card"><span>Issued</span><b>\(totals.issued)</b></div>
            <div class="card"><span>Redeemed</span><b>\(totals.redeemed)</b></div>
            <div class="card"><span>Renewed after the offer</span><b>\(totals.renewed)</b></div>
            <div class="card"><span>Refunded</span><b>\(totals.refunded)</b></div></div>
            """
        let table: HTML = rows.isEmpty
            ? "<p class=\"muted\">No offer was issued or redeemed in the last 30 days.</p>"
            : ConsoleLayout.table(["App", "Product", "Offer", "Channel", "Issued", "Customers", "Redeemed", "Attributed", "Renewed", "Refunded", "Revenue"], rows, numericFrom: 4)
        return ConsoleLayout.page("Offers", session: session, current: "/console/offers", body: """
            <p class="muted">\(ConsoleLayout.date(from)) to \(ConsoleLayout.date(now))</p>
            \(funnel)
            <h2>Issued and redeemed per day (UTC)</h2>
            \(ConsoleCharts.dailyBars(days))
            <h2>Per offer</h2>
            \(table)
            """)
    }

    private struct Totals { var issued = 0, redeemed = 0, attributed = 0, renewed = 0, refunded = 0 }

    private static func totals(_ offers: [OfferOutcome]) -> Totals {
        offers.reduce(into: Totals()) { totals, offer in
            totals.issued += offer.issued
            totals.redeemed += offer.redeemed
            totals.attributed += offer.attributed
            totals.renewed += offer.renewedAfterOffer
            totals.refunded += offer.refunded
        }
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
                "<code>\(entry.key.keyIdentifier)</code>", "<span class=\"\(state == .active ? "ok" : state == .revoked ? "bad" : "muted")\">\(state.rawValue)</span>",
                "<code>\(entry.key.fingerprint.prefix(23))</code>", "\(entry.source)", "\(ConsoleLayout.date(entry.loadedAt))",
                "\(counts[entry.key.keyIdentifier, default: 0])",
            ]
        }
        return ConsoleLayout.table(["Key", "State", "Fingerprint", "Source", "Loaded", "Signed here"], rows, numericFrom: 5)
    }
}
