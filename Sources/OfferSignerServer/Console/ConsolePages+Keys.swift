import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning

extension ConsolePages {
    /// The key changes the Keys page offers.
    static let keyActions = ["activate", "retire", "revoke"]

    /// `/console/keys`: the keys, a form to change one (typing its identifier to confirm), the last 50 audit events.
    func keys(_ session: ConsoleSession, message: HTML?) async throws -> HTML {
        let ring = await useCases.keys?.keyRing ?? useCases.signing.keys.current
        let options: [HTML] = ring.entries.map { "<option value=\"\($0.key.keyIdentifier)\">\($0.key.keyIdentifier)</option>" }
        let actions: [HTML] = Self.keyActions.map { "<option value=\"\($0)\">\($0)</option>" }
        let form: HTML =
            useCases.keys == nil
            ? "<p class=\"muted\">Key changes are not available in this configuration.</p>"
            : """
            <form class="stack" method="post" action="/console/keys">\(ConsoleLayout.csrfField(session))
            <label for="keyIdentifier">Key</label><select id="keyIdentifier" name="keyIdentifier">\(options)</select>
            <label for="action">Change</label><select id="action" name="action">\(actions)</select>
            <label for="confirmation">Type the key identifier to confirm</label>
            <input id="confirmation" name="confirmation" required maxlength="64" autocomplete="off">
            <button class="danger" type="submit">Apply</button>
            </form>
            """
        var audit: HTML = "<p class=\"muted\">The audit needs the customer store.</p>"
        if let logs = useCases.logs {
            let events = try await logs.auditEvents(limit: 50)
            let rows: [[HTML]] = events.map { event in
                let details = event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                return ["\(ConsoleLayout.date(event.at))", "\(event.actor)", "\(event.action)", "\(event.target)", "\(details)"]
            }
            audit =
                rows.isEmpty
                ? "<p class=\"muted\">No audit event yet.</p>" : ConsoleLayout.table(["When", "Admin", "Action", "Target", "Details"], rows)
        }
        return ConsoleLayout.page(
            "Keys",
            session: session,
            current: "/console/keys",
            body: """
                \(message ?? .empty)
                \(Self.keyTable(ring, counts: useCases.signing.signatureCountsByKey))
                <h2>Change a key</h2>
                <p class="note">Activating makes a key the default signing key; retiring stops signing with it (its signatures still verify); \
                revoking stops both. The change is saved, served at once, and audited under your name.</p>
                \(form)
                <h2>Audit (last 50 events)</h2>
                \(audit)
                """
        )
    }

    /// `POST /console/keys`: the same key operations as `POST /admin/keys/{keyIdentifier}/{action}`, audited under the
    /// admin's name; the confirmation must be the key identifier.
    func changeKey(_ form: ConsoleForm, session: ConsoleSession, logger: Logger) async throws -> Response {
        guard let keyAdministration = useCases.keys else {
            throw APIError(.notFound, "Key changes are not available in this configuration.")
        }
        guard let keyIdentifier = form["keyIdentifier"], (1...64).contains(keyIdentifier.utf8.count),
            let action = form["action"], Self.keyActions.contains(action), let change = KeyAdministration.Change(rawValue: action)
        else {
            throw APIError.invalidRequest(field: "keyIdentifier", "Choose a key and a change (activate, retire or revoke).")
        }
        guard form["confirmation"]?.trimmingCharacters(in: .whitespaces) == keyIdentifier else {
            let message: HTML = "<p class=\"error\" role=\"alert\">Nothing changed: the confirmation is not the key identifier \(keyIdentifier).</p>"
            return try await keys(session, message: message).response(status: .badRequest)
        }
        let admin = session.admin
        do {
            // Audited as `key.<action>` with `via: console` (an audit that cannot be written is logged, not a failure).
            _ = try await keyAdministration.change(change, keyIdentifier: keyIdentifier, by: admin, via: "console", logger: logger)
        } catch {
            let apiError = APIError(pipeline: error, logger: logger)
            let message: HTML = "<p class=\"error\" role=\"alert\">Nothing changed: \(apiError.message)</p>"
            return try await keys(session, message: message).response(status: apiError.status)
        }
        logger.notice("console: key \(action)", metadata: ["admin": "\(admin)", "keyIdentifier": "\(keyIdentifier)"])
        let message: HTML = "<p class=\"ok\" role=\"status\">Key \(keyIdentifier): \(action) done.</p>"
        return try await keys(session, message: message).response()
    }
}
