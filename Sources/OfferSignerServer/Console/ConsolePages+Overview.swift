import Foundation
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning

extension ConsolePages {
    /// A configuration problem the overview names, with what to do about it.
    struct Warning: Sendable {
        enum Level: String, Sendable { case bad, warn }
        var level: Level
        /// A stable name, for the tests and the browser check (`data-warning`).
        var name: String
        var text: String
    }

    /// The minutes of answers the overview's error rate and latency cover.
    static let recentMinutes = 15

    /// `/console`: what needs attention (configuration warnings), health (store, key, error rate, latency, last
    /// signature and notification, version, uptime), the keys, signatures today and this week, and the range's
    /// outcomes with their rates and revenue per currency.
    func overview(_ session: ConsoleSession, range: ConsoleRange) async throws -> HTML {
        let now = Date()
        let health = useCases.health
        let reachable = await health.isReachable()
        var activity: StoreActivity?
        if reachable { activity = await health.latestActivity() }
        let ring = await useCases.keys?.keyRing ?? useCases.signing.keys.current
        let recent = RequestTally.summary(minutes: Self.recentMinutes, now: now)
        var warnings = configurationWarnings(ring: ring, reachable: reachable, activity: activity)
        if let rate = recent.serverErrorRate, rate >= 0.01, recent.serverErrors >= 3 {
            warnings.append(
                Warning(
                    level: .bad,
                    name: "server-errors",
                    text:
                        """
                        \(ConsoleLayout.percent(rate)) of the answers of the last \(recent.minutes) minutes were server errors (5xx): read the \
                        service's log (level error) and /readyz.
                        """
                )
            )
        }
        let store: HTML =
            !health.hasStore
            ? "<b class=\"muted\">none configured</b>" : reachable ? "<b class=\"ok\">reachable</b>" : "<b class=\"bad\">unreachable</b>"
        let active: HTML = ring.activeKeyIdentifier.map { "<code>\($0)</code>" } ?? "<span class=\"bad\">none</span>"
        var body: HTML = """
            \(Self.warningList(warnings))
            <h2>Health</h2>
            <div class="cards"><div class="card"><span>Customer store</span>\(store)</div>
            <div class="card"><span>Active key</span><b>\(active)</b></div>
            \(Self.recentCards(recent))
            <div class="card"><span>Last signature</span><b \
            data-metric="last-signature">\(Self.ago(activity?.lastSignature, now: now))</b>\(Self.stamp(activity?.lastSignature))</div>
            <div class="card"><span>Last App Store notification</span><b \
            data-metric="last-notification">\(Self.ago(activity?.lastNotification, now: now))</b>\(Self.stamp(activity?.lastNotification))</div>
            <div class="card"><span>Version</span><b data-metric="version">\(ServiceVersion.current)</b></div>
            <div class="card"><span>Up for</span><b \
            data-metric="uptime">\(Self.duration(now.timeIntervalSince(RequestTally.startedAt)))</b><span>since \
            \(ConsoleLayout.date(RequestTally.startedAt))</span></div>
            <div class="card"><span>Policy in force</span>\(Self.policySummary(useCases.signing.policy))</div></div>
            \(Self.keyTable(ring, counts: useCases.signing.signatureCountsByKey))
            """
        guard health.hasStore else {
            return ConsoleLayout.page(
                "Overview",
                session: session,
                current: "/console",
                body: "\(body)<p class=\"note\">Outcomes need the customer store (\(ConfigurationVariable.databaseUrl.environmentName)).</p>"
            )
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        let today = calendar.startOfDay(for: now)
        // Totals, not reports: a few rows from the rollups whatever the number of apps and offers (docs/console.md).
        let issuedToday = try await useCases.outcomes.outcomeTotals(from: today, to: now, bundleIdentifier: nil, environment: nil).issued
        let weekAgo = now.addingTimeInterval(-7 * 86_400)
        let issuedWeek = try await useCases.outcomes.outcomeTotals(from: weekAgo, to: now, bundleIdentifier: nil, environment: nil).issued
        let totals = try await useCases.outcomes.outcomeTotals(from: range.from, to: range.to, bundleIdentifier: nil, environment: nil)
        let decisions = try await health.decisionCounts(from: range.from, to: range.to)
        body = """
            \(body)
            <h2>Signatures</h2>
            <div class="cards"><div class="card"><span>Today (UTC)</span><b data-metric="issued-today">\(issuedToday)</b></div>
            <div class="card"><span>Last 7 days</span><b data-metric="issued-week">\(issuedWeek)</b></div></div>
            <h2 id="range-title">\(range.title)</h2>
            \(range.selector(path: "/console"))
            <div class="cards">
            <div class="card"><span>Issued</span><b data-metric="issued">\(totals.issued)</b></div>
            \(Self.refusalCard(decisions))
            <div class="card"><span>Redeemed</span><b data-metric="redeemed">\(totals.redeemed)</b></div>
            \(Self.redemptionRateCard(totals))
            <div class="card"><span>Attributed to a signature</span><b data-metric="attributed">\(totals.attributed)</b></div>
            \(Self.revenueCard(totals.revenue))
            <div class="card"><span>Retention answered</span><b data-metric="retention-answered">\(totals.retention.answered)</b></div>
            <div class="card"><span>Retention saved</span><b data-metric="retention-saved">\(totals.retention.saved)</b></div>
            <div class="card"><span>Save rate</span><b data-metric="save-rate">\(ConsoleLayout.percent(totals.retention.saveRate))</b></div>
            </div>
            <p><a href="/console/offers?\(range.query)">Every offer, and the daily chart →</a></p>
            """
        return ConsoleLayout.page("Overview", session: session, current: "/console", body: body)
    }

    /// What is configured so that the service cannot do part of its job, each with what to do.
    func configurationWarnings(ring: KeyRing, reachable: Bool, activity: StoreActivity?) -> [Warning] {
        var warnings: [Warning] = []
        if adminTokens.admin(presenting: ServiceConfiguration.demoAdminToken) != nil {
            warnings.append(
                Warning(
                    level: .warn,
                    name: "demo",
                    text:
                        """
                        Demo mode: the public admin token \(ServiceConfiguration.demoAdminToken) signs anyone in, the data is made up and the \
                        key is thrown away at exit. Never expose this service; run `offer-signer serve` with your own \
                        \(ConfigurationVariable.adminTokens.environmentName) for real.
                        """
                )
            )
        }
        if ring.activeKeyIdentifier == nil {
            warnings.append(
                Warning(level: .bad, name: "no-active-key", text: "No key is active: every signing request fails. Activate one on the Keys page.")
            )
        }
        guard useCases.health.hasStore else {
            warnings.append(
                Warning(
                    level: .bad,
                    name: "no-store",
                    text:
                        """
                        No customer store: App Store notifications are refused, redemptions are never counted, and rules that read history \
                        (caps, cool-downs, lapsed) cannot decide. Set \(ConfigurationVariable.databaseUrl.environmentName).
                        """
                )
            )
            return warnings
        }
        if !reachable {
            warnings.append(
                Warning(
                    level: .bad,
                    name: "store-unreachable",
                    text:
                        """
                        The customer store does not answer: signing under rules that read it, notifications and these pages fail (503). See \
                        docs/operations.md, “The store is unavailable”.
                        """
                )
            )
        }
        if !useCases.signing.takesAppStoreData {
            warnings.append(
                Warning(
                    level: .bad,
                    name: "notifications-refused",
                    text:
                        """
                        App Store notifications are refused (503): no app can verify them. Redemptions, renewals and refunds can never be \
                        counted, and customers stay never_subscribed. Set \(ConfigurationVariable.appAppleId.environmentName) (the app's Apple \
                        ID, needed for Production) and restart, then point App Store Connect's App Store Server Notifications URL at \
                        /v1/notifications/appstore.
                        """
                )
            )
        } else {
            let missing = useCases.signing.apps.values.filter { $0.appAppleId == nil }.map(\.bundleIdentifier).sorted()
            if !missing.isEmpty {
                warnings.append(
                    Warning(
                        level: .warn,
                        name: "no-app-apple-id",
                        text:
                            """
                            Production notifications for \(missing.joined(separator: ", ")) will be refused: no appAppleId \
                            (\(ConfigurationVariable.appAppleId.environmentName), or appAppleId in the policy). Sandbox ones are accepted.
                            """
                    )
                )
            }
            if reachable, activity?.lastNotification == nil {
                warnings.append(
                    Warning(
                        level: .warn,
                        name: "no-notification",
                        text:
                            """
                            No App Store notification has arrived yet: until one does, no redemption is counted. Check the App Store Server \
                            Notifications URL (Version 2) in App Store Connect, or request a test notification.
                            """
                    )
                )
            }
        }
        if useCases.signing.policy == nil {
            warnings.append(
                Warning(
                    level: .warn,
                    name: "no-policy",
                    text:
                        """
                        No policy is in force: every well-formed request is signed, whoever asks. Set \
                        \(ConfigurationVariable.policy.environmentName) (see examples/policy.yaml).
                        """
                )
            )
        }
        return warnings
    }

    /// The warnings as a list under a line that says whether anything needs attention.
    static func warningList(_ warnings: [Warning]) -> HTML {
        guard !warnings.isEmpty else {
            return
                """
                <p class=\"status ok\" id=\"status\" data-warnings=\"0\">Nothing needs attention: the store answers, a key is active and \
                notifications are accepted.</p>
                """
        }
        let worst: Warning.Level = warnings.contains { $0.level == .bad } ? .bad : .warn
        let items: [HTML] = warnings.map { "<li class=\"\($0.level.rawValue)\" data-warning=\"\($0.name)\">\($0.text)</li>" }
        let count = warnings.count == 1 ? "1 thing needs" : "\(warnings.count) things need"
        return """
            <section class="status \(worst.rawValue)" id="status" data-warnings="\(warnings.count)" role="alert"><b>\(count) attention</b>
            <ul class="warnings">\(items)</ul></section>
            """
    }

    /// The error rate and latency of the last minutes' answers (``RequestTally``).
    static func recentCards(_ recent: RequestTally.Summary) -> HTML {
        let rate: HTML =
            recent.serverErrorRate.map { value in
                "<b class=\"\(value >= 0.01 ? "bad" : "ok")\" data-metric=\"error-rate\">\(ConsoleLayout.percent(value))</b>"
            } ?? "<b class=\"muted\" data-metric=\"error-rate\">–</b>"
        func bound(_ milliseconds: Int?) -> String {
            guard let milliseconds else { return "–" }
            return milliseconds == Int.max ? "> \(RequestTally.bucketBounds.last ?? 0) ms" : "≤ \(milliseconds) ms"
        }
        return """
            <div class="card"><span>Server errors, last \(recent.minutes) min</span>\(rate)<span>\(recent.serverErrors) of \(recent.answered) \
            answers; \(recent.clientErrors) refused as the client's (4xx)</span></div>
            <div class="card"><span>Latency, last \(recent.minutes) min</span><b \
            data-metric="latency-p50">\(bound(recent.durationBound(below: 0.5)))</b><span>half the answers; 99 %: <span \
            data-metric="latency-p99">\(bound(recent.durationBound(below: 0.99)))</span></span></div>
            """
    }

    static func refusalCard(_ decisions: (granted: Int, refused: Int)?) -> HTML {
        guard let decisions else { return .empty }
        let total = decisions.granted + decisions.refused
        let rate = total > 0 ? ConsoleLayout.percent(Double(decisions.refused) / Double(total)) : "–"
        return
            """
            <div class=\"card\"><span>Refusal rate</span><b data-metric=\"refusal-rate\">\(rate)</b><span>\(decisions.refused) of \(total) \
            decisions under the policy</span></div>
            """
    }

    static func redemptionRateCard(_ totals: OutcomeTotals) -> HTML {
        let rate = totals.issued > 0 ? ConsoleLayout.percent(Double(totals.attributed) / Double(totals.issued)) : "–"
        return
            """
            <div class=\"card\"><span>Redemption rate</span><b data-metric=\"redemption-rate\">\(rate)</b><span>redemptions attributed per \
            signature issued</span></div>
            """
    }

    /// The revenue of the range, one line per currency (never summed across currencies).
    static func revenueCard(_ amounts: [Revenue]) -> HTML {
        let lines: [HTML] = amounts.map { "<b data-currency=\"\($0.currency)\">\(ConsoleLayout.money($0.milliunits, $0.currency))</b>" }
        return "<div class=\"card\" data-metric=\"revenue\"><span>Revenue of redeemed offers</span>\(lines.isEmpty ? ["<b>–</b>"] : lines)</div>"
    }

    /// Revenue in thousandths per currency, sorted by currency.
    static func revenueByCurrency(_ offers: [OfferOutcome]) -> [(currency: String, milliunits: Int64)] {
        var sums: [String: Int64] = [:]
        for offer in offers {
            for revenue in offer.revenue { sums[revenue.currency, default: 0] &+= revenue.milliunits }
        }
        return sums.sorted { $0.key < $1.key }.map { (currency: $0.key, milliunits: $0.value) }
    }

    /// `3 min ago`, `never` for `nil`.
    static func ago(_ date: Date?, now: Date) -> String {
        guard let date else { return "never" }
        return "\(duration(now.timeIntervalSince(date))) ago"
    }

    /// The date under a card's figure, when there is one.
    static func stamp(_ date: Date?) -> HTML {
        date.map { "<span>\(ConsoleLayout.date($0))</span>" } ?? .empty
    }

    /// A duration in its largest whole unit and the next: `45 s`, `12 min`, `3 h 20 min`, `2 d 4 h`.
    static func duration(_ seconds: TimeInterval) -> String {
        let whole = Int(max(0, min(seconds, 1e9)))
        switch whole {
        case ..<60: return "\(whole) s"
        case ..<3_600: return "\(whole / 60) min"
        case ..<86_400: return "\(whole / 3_600) h \(whole % 3_600 / 60) min"
        default: return "\(whole / 86_400) d \(whole % 86_400 / 3_600) h"
        }
    }
}
