import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferKeys
import OfferSigning
import OfferStore

/// One key as `GET /admin/keys` lists it.
struct AdminKeyDescription: Codable, Sendable {
    var keyIdentifier: String
    var state: KeyState
    var fingerprint: String
    var source: String
    /// When the key was loaded (Unix milliseconds on the wire); `nil` for a revoked key whose file was removed.
    var loadedAt: Date?
    /// Signatures made with this key by this process since it started.
    var signaturesIssued: Int
}

struct AdminKeyList: ResponseEncodable {
    var activeKeyIdentifier: String?
    var keys: [AdminKeyDescription]
}

/// `/admin/keys`: list, reload, activate, retire, revoke.
struct AdminKeyRoutes {
    let service: OfferService
    let manager: KeyManager

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/keys") { _, _ in list(await manager.keyRing) }
        group.post("/keys/reload") { _, context -> AdminKeyList in
            let admin = context.adminName ?? "unknown"
            // A refusal is a KeyManagementError, mapped to HTTP with every other error (ErrorMappingMiddleware).
            let ring = try await manager.reload(reason: "admin \(admin)")
            // The new keys serve from here on: a history entry that cannot be saved is logged, not reported as a
            // failed reload.
            do {
                try await manager.recordReload(by: admin)
            } catch {
                context.logger.warning("keys reloaded, but the reload could not be added to the key-state history", metadata: ["admin": "\(admin)"])
            }
            return list(ring)
        }
        for action in ["activate", "retire", "revoke"] {
            group.post("/keys/:keyIdentifier/\(action)") { _, context -> AdminKeyList in
                let keyIdentifier = try context.parameters.require("keyIdentifier")
                let admin = context.adminName ?? "unknown"
                let ring: KeyRing
                switch action {
                case "activate": ring = try await manager.activate(keyIdentifier, by: admin)
                case "retire": ring = try await manager.retire(keyIdentifier, by: admin)
                default: ring = try await manager.revoke(keyIdentifier, by: admin)
                }
                // The change is saved (with its history entry) and served: an audit row that cannot be written is
                // logged, never reported as a failed change.
                if let store = service.store {
                    do {
                        try await store.appendAudit(AuditEvent(actor: admin, action: "key.\(action)", target: keyIdentifier))
                    } catch {
                        context.logger.warning(
                            "key state changed, but the audit event could not be written",
                            metadata: ["admin": "\(admin)", "action": "\(action)", "keyIdentifier": "\(keyIdentifier)"]
                        )
                    }
                }
                return list(ring)
            }
        }
    }

    private func list(_ ring: KeyRing) -> AdminKeyList {
        let counts = service.signatureCountsByKey
        return AdminKeyList(
            activeKeyIdentifier: ring.activeKeyIdentifier,
            keys: ring.entries.map { entry in
                AdminKeyDescription(
                    keyIdentifier: entry.key.keyIdentifier,
                    state: ring.state(of: entry.key.keyIdentifier) ?? .retired,
                    fingerprint: entry.key.fingerprint,
                    source: entry.source,
                    loadedAt: entry.loadedAt,
                    signaturesIssued: counts[entry.key.keyIdentifier, default: 0]
                )
            }
                + ring.revokedKeysNotLoaded.map { key in
                    AdminKeyDescription(
                        keyIdentifier: key.keyIdentifier,
                        state: .revoked,
                        fingerprint: key.fingerprint,
                        source: "not loaded (its file was removed; the key states remember it as revoked)",
                        loadedAt: nil,
                        signaturesIssued: counts[key.keyIdentifier, default: 0]
                    )
                }
        )
    }
}
