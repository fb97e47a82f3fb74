import Foundation
import Hummingbird
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSigning

extension ConsolePages {
    /// `/console/customers?bundleId=…&customer=…`: what the rules see of one customer and the signatures issued to
    /// them (`GET /admin/customers/{bundleId}/{applicationUsername}` and `GET /admin/signatures`).
    func customer(_ query: ConsoleForm, session: ConsoleSession) async throws -> HTML {
        // Exactly as typed, as the admin API reads its path: ` a` is another customer than `a` (and a leading or
        // trailing space is kept, never trimmed into someone else).
        // A service with one app: its bundle ID is filled in.
        var bundleIdentifier = query["bundleId"] ?? (useCases.signing.apps.count == 1 ? useCases.signing.apps.keys.first ?? "" : "")
        var applicationUsername = query["customer"] ?? ""
        let originalTransactionId = query["originalTransactionId"] ?? ""
        let search: HTML = """
            <form class="inline" method="get" action="/console/customers">
            <input name="bundleId" placeholder="bundle ID" value="\(bundleIdentifier)" maxlength="155" required>
            <input name="customer" placeholder="applicationUsername / appAccountToken" value="\(applicationUsername)" maxlength="255" required>
            <button type="submit">Look up</button></form>
            <form class="inline" method="get" action="/console/customers">
            <input name="originalTransactionId" placeholder="originalTransactionId" value="\(originalTransactionId)" inputmode="numeric" \
            maxlength="32" required>
            <button type="submit">Look up</button></form>
            """
        if !originalTransactionId.isEmpty, let view = useCases.customerView {
            let keys = try await view.customers(withOriginalTransactionId: originalTransactionId)
            if keys.count == 1 {
                (bundleIdentifier, applicationUsername) = (keys[0].bundleIdentifier, keys[0].applicationUsername)
            } else {
                let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
                let links: [HTML] = keys.map { key in
                    let bundle = key.bundleIdentifier.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
                    let customer = key.applicationUsername.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
                    let href = "/console/customers?bundleId=\(bundle)&customer=\(customer)"
                    return "<li><a href=\"\(href)\">\(key.bundleIdentifier) · \(key.applicationUsername)</a></li>"
                }
                let found: HTML =
                    keys.isEmpty
                    ? "<p class=\"muted\">No customer is known with the original transaction \(originalTransactionId).</p>"
                    : "<p>Customers with the original transaction \(originalTransactionId):</p><ul>\(links)</ul>"
                return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: "\(search)\(found)")
            }
        }
        guard !bundleIdentifier.isEmpty, !applicationUsername.isEmpty else {
            return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: search)
        }
        guard let view = useCases.customerView else {
            return ConsoleLayout.page(
                "Customer",
                session: session,
                current: "/console/customers",
                body: "\(search)<p class=\"muted\">Customers need the customer store.</p>"
            )
        }
        // The admin API's own validation, messages and 404 unknown_app (GET /admin/customers/{bundleIdentifier}/{applicationUsername}).
        let key = try AdminCustomerRoutes.customerKey(
            bundleIdentifier: bundleIdentifier,
            applicationUsername: applicationUsername,
            signing: useCases.signing
        )
        let facts = try await view.facts(of: key)
        let signatures = try await view.issuedSignatures(of: key)
        var body: HTML = search
        if let facts {
            let subscriptions: [[HTML]] = facts.subscriptions.map { subscription in
                [
                    "\(subscription.productIdentifier)", "\(subscription.state.rawValue)", "\(subscription.autoRenewEnabled ? "on" : "off")",
                    "\(subscription.expiresDate.map(ConsoleLayout.date) ?? "–")", "\(subscription.renewalCount)",
                    "\(subscription.hadIntroductoryOffer ? "yes" : "no")", "\(subscription.lastSignedDate.map(ConsoleLayout.date) ?? "–")",
                ]
            }
            let flags = facts.flags.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
            let grants: [[HTML]] = facts.grants.map { grant in
                [
                    "\(grant.productIdentifier)", "\(grant.offerIdentifier)", "\(grant.grantedBy)", "\(ConsoleLayout.date(grant.expiresAt))",
                    "\(grant.usedAt.map(ConsoleLayout.date) ?? "unused")",
                ]
            }
            let subscriptionTable: HTML =
                subscriptions.isEmpty
                ? "<p class=\"muted\">No subscription known.</p>"
                : ConsoleLayout.table(["Product", "State", "Auto-renew", "Expires", "Renewals", "Had intro", "Last signed"], subscriptions)
            let grantTable: HTML =
                grants.isEmpty ? "<p class=\"muted\">None.</p>" : ConsoleLayout.table(["Product", "Offer", "Granted by", "Expires", "Used"], grants)
            body = """
                \(body)
                <h2>Facts</h2>
                <p>Storefront \(facts.storefront ?? "unknown") · flags \(flags.isEmpty ? "none" : flags) · updated \
                \(ConsoleLayout.date(facts.updatedAt))</p>
                \(subscriptionTable)
                <h2>Customer-service grants</h2>
                \(grantTable)
                """
        } else {
            body = "\(body)<p class=\"muted\">The store has not heard of this customer.</p>"
        }
        let rows: [[HTML]] = signatures.map { signature in
            [
                "\(ConsoleLayout.date(Date(timeIntervalSince1970: Double(signature.timestamp) / 1000)))", "\(signature.productIdentifier)",
                "\(signature.offerIdentifier)", ConsoleLayout.channel(signature.channel), "<code>\(signature.keyIdentifier)</code>",
                "\(signature.format)",
            ]
        }
        var originals = facts?.subscriptions.compactMap(\.originalTransactionId) ?? []
        if !originalTransactionId.isEmpty { originals.append(originalTransactionId) }
        return ConsoleLayout.page(
            "Customer",
            session: session,
            current: "/console/customers",
            body: """
                \(body)
                \(try await decisions(key, view: view))
                \(try await outcomes(key, originalTransactionIds: originals, view: view))
                <h2>Signatures issued (newest 100)</h2>
                \(rows.isEmpty ? "<p class=\"muted\">None.</p>" : ConsoleLayout.table(["When", "Product", "Offer", "Channel", "Key", "Format"], rows))
                """
        )
    }

    /// How far back the customer page reads the decision log (``CustomerView/decisionWindowDays``).
    static let decisionWindowDays = CustomerView.decisionWindowDays

    /// Every decision the log kept about the customer in the window, newest first (at most 100), with its reasons.
    private func decisions(_ key: CustomerKey, view: CustomerView) async throws -> HTML {
        let records = try await view.decisions(of: key)
        let rows: [[HTML]] = records.map { record in
            let reasons: [HTML] = record.reasons.split(separator: ",").map { reason in
                "<span class=\"reason\">\(Self.reasonWords(String(reason))) <code>\(String(reason))</code></span>"
            }
            let what = record.retentionEntry.map { retentionName($0, offerIdentifier: record.offerIdentifier) } ?? record.offerIdentifier
            return [
                "\(ConsoleLayout.date(Date(timeIntervalSince1970: Double(record.decidedAt) / 1000)))", ConsoleLayout.channel(record.channel),
                "\(record.productIdentifier)",
                "\(what.isEmpty ? "–" : what)", record.granted ? "<span class=\"ok\">granted</span>" : "<span class=\"bad\">refused</span>",
                record.granted ? "<span class=\"muted\">–</span>" : "\(reasons)",
                "<code title=\"\(record.policyVersion)\">\(record.policyVersion.prefix(8))</code>",
            ]
        }
        let table: HTML =
            rows.isEmpty
            ? """
            <p class=\"muted\">No decision logged about this customer in the last \(Self.decisionWindowDays) days (decisions under a policy \
            only; without \(ConfigurationVariable.logHashKey.environmentName), only this process's).</p>
            """
            : ConsoleLayout.table(["When", "Channel", "Product", "Offer or message", "Answer", "Reasons", "Policy"], rows)
        return "<h2 id=\"decisions\">Decisions, with their reasons (last \(Self.decisionWindowDays) days, newest 100)</h2>\(table)"
    }

    /// The redemptions of the customer or of their subscriptions, and the retention answers given about them.
    private func outcomes(_ key: CustomerKey, originalTransactionIds: [String], view: CustomerView) async throws -> HTML {
        let outcomes = try await view.outcomes(of: key, originalTransactionIds: originalTransactionIds)
        func date(_ milliseconds: Int64?) -> String {
            milliseconds.map { ConsoleLayout.date(Date(timeIntervalSince1970: Double($0) / 1000)) } ?? "–"
        }
        let redemptions: [[HTML]] = outcomes.redemptions.map { history in
            let redemption = history.redemption
            let price = redemption.price.map { ConsoleLayout.money($0, redemption.currency ?? "") } ?? "–"
            let attributed =
                history.signatureChannel.map { "\(ConsoleLayout.channelName($0)), signed \(date(history.signatureTimestamp))" }
                ?? "no signature of this service"
            return [
                "\(date(redemption.purchaseDate))", "\(redemption.productIdentifier)", "\(redemption.offerIdentifier ?? "(introductory)")",
                "\(Self.offerTypeName(redemption.offerType))", "\(price)", "\(attributed)", "\(date(history.renewedAt))",
                history.refundedAt == nil ? "–" : "<span class=\"bad\">\(date(history.refundedAt))</span>", "\(date(history.expiredAt))",
            ]
        }
        let answers: [[HTML]] = outcomes.retentionAnswers.map { history in
            [
                "\(date(history.answer.answeredAt))", "\(history.answer.productIdentifier)",
                "\(history.answer.offered ? "an offer" : "a message or another product")",
                history.savedAt == nil ? "<span class=\"muted\">not (yet)</span>" : "<span class=\"ok\">\(date(history.savedAt))</span>",
            ]
        }
        let redemptionColumns = ["Purchased", "Product", "Offer", "Type", "Paid", "Attributed to", "Renewed", "Refunded", "Expired"]
        let redemptionTable: HTML =
            redemptions.isEmpty ? "<p class=\"muted\">No offer redeemed.</p>" : ConsoleLayout.table(redemptionColumns, redemptions)
        return """
            <h2 id="redemptions">Redemptions</h2>
            \(redemptionTable)
            <h2 id="retention">Retention answers</h2>
            \(answers.isEmpty ? "<p class=\"muted\">None.</p>" : ConsoleLayout.table(["Answered", "Product", "Answer", "Saved"], answers))
            """
    }

    /// The App Store's `offerType` in words (1 introductory offer, 2 promotional offer, 3 offer code, 4 win-back offer).
    static func offerTypeName(_ offerType: Int32) -> String {
        switch offerType {
        case 1: "introductory offer"
        case 2: "promotional offer"
        case 3: "offer code"
        case 4: "win-back offer"
        default: "offer type \(offerType)"
        }
    }

    /// A retention decision's entry by the policy's name for it (its `messageName`, else the offer or answer it
    /// gives), not the message's UUID; an entry the policy in force no longer has keeps its short identifier.
    func retentionName(_ messageIdentifier: String, offerIdentifier: String) -> String {
        let entries = useCases.signing.policy?.apps.flatMap(\.products).flatMap(\.retention) ?? []
        if let entry = entries.first(where: { $0.messageIdentifier == messageIdentifier }) {
            return entry.messageName ?? (entry.offerIdentifier.isEmpty ? "message \(messageIdentifier.prefix(8))…" : entry.offerIdentifier)
        }
        return offerIdentifier.isEmpty ? "message \(messageIdentifier.prefix(8))…" : offerIdentifier
    }

    /// What a refusal's `rule:code` means, in the words of the message the API answers with (without the
    /// customer's particulars, which the decision log does not keep).
    static func reasonWords(_ reason: String) -> String {
        let code = reason.split(separator: ":").last.map(String.init) ?? reason
        return reasonMessages[code] ?? (code.hasPrefix("excluded_by_") ? "The customer matches a rule that excludes this offer." : "Refused.")
    }

    static let reasonMessages: [String: String] = [
        "auto_renew_on": "The customer's subscription will renew; auto-renew is on.",
        "cap_reached": "This offer was signed as often as its cap allows for this customer.",
        "cooling_down": "An offer was signed for this customer too recently.",
        "customer_denied": "This customer is on the offer's deny list.",
        "customer_not_allowed": "This customer is not on the offer's allow list.",
        "experiment_holdout": "This customer is in an experiment's holdout, which gets no offer.",
        "expiry_unknown": "When the customer's subscription expired is not known.",
        "had_introductory_offer": "The customer already had the introductory offer.",
        "lapsed_too_long_ago": "The subscription lapsed longer ago than this offer allows.",
        "lapsed_too_recently": "The subscription lapsed too recently for this offer.",
        "never_subscribed": "The customer has never subscribed (no App Store notification or transaction about them yet).",
        "no_alternative": "None of the alternatives applies.",
        "no_billing_issue": "The customer's subscription has no billing issue.",
        "no_grant": "No unused, unexpired customer-service grant for this offer.",
        "not_active_subscriber": "The customer is not an active subscriber.",
        "not_beta": "Only beta testers get this offer.",
        "not_churn_risk": "The customer's flag does not have a value this offer needs.",
        "not_downgraded": "The customer has not downgraded their subscription.",
        "not_lapsed": "The customer's subscription has not lapsed.",
        "not_loyal_enough": "The customer has not renewed as often as this offer needs.",
        "offer_ended": "This offer has ended.",
        "offer_not_started": "This offer has not started yet.",
        "storefront_denied": "This offer is not available in the customer's storefront.",
        "storefront_not_allowed": "This offer is not available in the customer's storefront.",
        "storefront_unknown": "This offer is limited to some storefronts and the customer's is not known.",
    ]
}
