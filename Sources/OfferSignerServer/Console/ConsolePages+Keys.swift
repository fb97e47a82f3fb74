import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore

extension ConsolePages {
    /// The key changes the Keys page offers.
    static let keyActions = ["activate", "retire", "revoke"]

    /// `/console/keys`: the keys, a form to change one (typing its identifier to confirm), the last 50 audit events.
    func keys(_ session: ConsoleSession, message: HTML?) async throws -> HTML {
        let ring = await keyManager?.keyRing ?? service.keys.current
        let options: [HTML] = ring.entries.map { "<option value=\"\($0.key.keyIdentifier)\">\($0.key.keyIdentifier)</option>" }
        let actions: [HTML] = Self.keyActions.map { "<option value=\"\($0)\">\($0)</option>" }
        let form: HTML = keyManager == nil ? "<p class=\"muted\">Key changes are not available in this configuration.</p>" : """
            <form class="stack" method="post" action="/console/keys">\(ConsoleLayout.csrfField(session))
            <label for="keyIdentifier">Key</label><select id="keyIdentifier" name="keyIdentifier">\(options)</select>
            <label for="action">Change</label><select id="action" name="action">\(actions)</select>
            <label for="confirmation">Type the key identifier to confirm</label>
            <input id="confirmation" name="confirmation" required maxlength="64" autocomplete="off">
            <button class="danger" type="submit">Apply</button>
            </form>
            """
        var audit: HTML = "<p class=\"muted\">The audit needs the customer store.</p>"
        if let store = service.store {
            let events = try await storeCall { try await store.auditEvents(limit: 50, since: nil) }
            let rows: [[HTML]] = events.map { event in
                let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                return ["\(ConsoleLayout.date(event.at))", "\(event.actor)", "\(event.action)", "\(event.target)", "\(details)"]
            }
            audit = rows.isEmpty ? "<p class=\"muted\">No audit event yet.</p>" : ConsoleLayout.table(["When", "Admin", "Action", "Target", "Details"], rows)
        }
        return ConsoleLayout.page("Keys", session: session, current: "/console/keys", body: """
            \(message ?? .empty)
            \(Self.keyTable(ring, counts: service.signatureCountsByKey))
            <h2>Change a key</h2>
            <p class="note">Activating makes a key the default signing key; retiring stops signing with it (its signatures still verify); revoking stops both. The change is saved, served at once, and audited under your name.</p>
            \(form)
            <h2>Audit (last 50 events)</h2>
            \(audit)
            """)
    }

    /// `POST /console/keys`: the same key operations as `POST /admin/keys/{keyIdentifier}/{action}`, audited under the
    /// admin's name; the confirmation must be the key identifier.
    func changeKey(_ form: ConsoleForm, session: ConsoleSession, logger: Logger) async throws -> Response {
        guard let keyManager else { throw APIError(status: .notFound, code: "not_found", message: "Key changes are not available in this configuration.") }
        guard let keyIdentifier = form["keyIdentifier"], (1...64).contains(keyIdentifier.utf8.count),
              let action = form["action"], Self.keyActions.contains(action)
        else {
            throw APIError.invalidRequest(field: "keyIdentifier", "Choose a key and a change (activate, retire or revoke).")
        }
        guard form["confirmation"]?.trimmingCharacters(in: .whitespaces) == keyIdentifier else {
            let message: HTML = "<p class=\"error\" role=\"alert\">Nothing changed: the confirmation is not the key identifier \(keyIdentifier).</p>"
            return try await keys(session, message: message).response(status: .badRequest)
        }
        let admin = session.admin
        do {
            switch action {
            case "activate": _ = try await keyManager.activate(keyIdentifier, by: admin)
            case "retire": _ = try await keyManager.retire(keyIdentifier, by: admin)
            default: _ = try await keyManager.revoke(keyIdentifier, by: admin)
            }
        } catch {
            let apiError = APIError(pipeline: error, logger: logger)
            let message: HTML = "<p class=\"error\" role=\"alert\">Nothing changed: \(apiError.message)</p>"
            return try await keys(session, message: message).response(status: apiError.status)
        }
        if let store = service.store {
            do {
                try await store.appendAudit(AuditEvent(actor: admin, action: "key.\(action)", target: keyIdentifier, details: ["via": "console"]))
            } catch {
                logger.warning("key state changed, but the audit event could not be written", metadata: ["admin": "\(admin)", "action": "\(action)", "keyIdentifier": "\(keyIdentifier)"])
            }
        }
        logger.notice("console: key \(action)", metadata: ["admin": "\(admin)", "keyIdentifier": "\(keyIdentifier)"])
        let message: HTML = "<p class=\"ok\" role=\"status\">Key \(keyIdentifier): \(action) done.</p>"
        return try await keys(session, message: message).response()
    }

    /// `/console/customers?bundleId=…&customer=…`: what the rules see of one customer and the signatures issued to
    /// them (`GET /admin/customers/{bundleId}/{applicationUsername}` and `GET /admin/signatures`).
    func customer(_ query: ConsoleForm, session: ConsoleSession) async throws -> HTML {
        var bundleIdentifier = query["bundleId"]?.trimmingCharacters(in: .whitespaces) ?? ""
        var applicationUsername = query["customer"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let originalTransactionId = query["originalTransactionId"]?.trimmingCharacters(in: .whitespaces) ?? ""
        let search: HTML = """
            <form class="inline" method="get" action="/console/customers">
            <input name="bundleId" placeholder="bundle ID" value="\(bundleIdentifier)" maxlength="155" required>
            <input name="customer" placeholder="applicationUsername / appAccountToken" value="\(applicationUsername)" maxlength="255" required>
            <button type="submit">Look up</button></form>
            <form class="inline" method="get" action="/console/customers">
            <input name="originalTransactionId" placeholder="originalTransactionId" value="\(originalTransactionId)" inputmode="numeric" maxlength="32" required>
            <button type="submit">Look up</button></form>
            """
        if !originalTransactionId.isEmpty, let store = service.store {
            guard (1...32).contains(originalTransactionId.utf8.count), originalTransactionId.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw APIError.invalidRequest(field: "originalTransactionId", "originalTransactionId is 1 to 32 digits.")
            }
            let keys = try await storeCall { try await store.customers(withOriginalTransactionId: originalTransactionId) }
            if keys.count == 1 {
                (bundleIdentifier, applicationUsername) = (keys[0].bundleIdentifier, keys[0].applicationUsername)
            } else {
                let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
                let links: [HTML] = keys.map { key in
                    let href = "/console/customers?bundleId=\(key.bundleIdentifier.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")&customer=\(key.applicationUsername.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
                    return "<li><a href=\"\(href)\">\(key.bundleIdentifier) · \(key.applicationUsername)</a></li>"
                }
                let found: HTML = keys.isEmpty
                    ? "<p class=\"muted\">No customer is known with the original transaction \(originalTransactionId).</p>"
                    : "<p>Customers with the original transaction \(originalTransactionId):</p><ul>\(links)</ul>"
                return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: "\(search)\(found)")
            }
        }
        guard !bundleIdentifier.isEmpty, !applicationUsername.isEmpty else {
            return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: search)
        }
        guard let store = service.store else {
            return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: "\(search)<p class=\"muted\">Customers need the customer store.</p>")
        }
        do throws(OfferSigningError) {
            try PayloadField.validate(bundleIdentifier, named: "bundleId", maximumLength: PayloadField.maximumBundleIdentifierLength)
            try PayloadField.validateApplicationUsername(applicationUsername, named: "customer")
        } catch {
            throw APIError(error)
        }
        let key = CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: applicationUsername)
        let facts = try await storeCall { try await store.customerFacts(for: key) }
        let signatures = try await storeCall {
            try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: key.bundleIdentifier, applicationUsername: key.applicationUsername, limit: 100))
        }
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
                ["\(grant.productIdentifier)", "\(grant.offerIdentifier)", "\(grant.grantedBy)", "\(ConsoleLayout.date(grant.expiresAt))", "\(grant.usedAt.map(ConsoleLayout.date) ?? "unused")"]
            }
            body = """
                \(body)
                <h2>Facts</h2>
                <p>Storefront \(facts.storefront ?? "unknown") · flags \(flags.isEmpty ? "none" : flags) · updated \(ConsoleLayout.date(facts.updatedAt))</p>
                \(subscriptions.isEmpty ? "<p class=\"muted\">No subscription known.</p>" : ConsoleLayout.table(["Product", "State", "Auto-renew", "Expires", "Renewals", "Had intro", "Last signed"], subscriptions))
                <h2>Customer-service grants</h2>
                \(grants.isEmpty ? "<p class=\"muted\">None.</p>" : ConsoleLayout.table(["Product", "Offer", "Granted by", "Expires", "Used"], grants))
                """
        } else {
            body = "\(body)<p class=\"muted\">The store has not heard of this customer.</p>"
        }
        let rows: [[HTML]] = signatures.map { signature in
            [
                "\(ConsoleLayout.date(Date(timeIntervalSince1970: Double(signature.timestamp) / 1000)))", "\(signature.productIdentifier)",
                "\(signature.offerIdentifier)", "\(signature.channel)", "<code>\(signature.keyIdentifier)</code>", "\(signature.format)",
            ]
        }
        return ConsoleLayout.page("Customer", session: session, current: "/console/customers", body: """
            \(body)
            <h2>Signatures issued (newest 100)</h2>
            \(rows.isEmpty ? "<p class=\"muted\">None.</p>" : ConsoleLayout.table(["When", "Product", "Offer", "Channel", "Key", "Format"], rows))
            """)
    }
}
