import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferKeys
import OfferSigning

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

/// `/admin/keys`: list, reload, activate, retire, revoke (``KeyAdministration``).
struct AdminKeyRoutes {
    let keys: KeyAdministration

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/keys") { _, _ in list(await keys.keyRing) }
        group.post("/keys/reload") { _, context -> AdminKeyList in
            // A refusal is a KeyManagementError, mapped to HTTP with every other error (ErrorMappingMiddleware).
            list(try await keys.reload(by: context.adminName ?? "unknown", logger: context.logger))
        }
        for change in KeyAdministration.Change.allCases {
            group.post("/keys/:keyIdentifier/\(change.rawValue)") { _, context -> AdminKeyList in
                let keyIdentifier = try context.parameters.require("keyIdentifier")
                return list(try await keys.change(change, keyIdentifier: keyIdentifier, by: context.adminName ?? "unknown", logger: context.logger))
            }
        }
    }

    private func list(_ ring: KeyRing) -> AdminKeyList {
        let counts = keys.signatureCountsByKey
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
