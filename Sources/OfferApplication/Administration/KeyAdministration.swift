import Logging
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore

/// What admins do to the signing keys (`/admin/keys…`): list them, reload them from their files, and activate,
/// retire or revoke one. A change of state is saved by the key manager with its history entry; it is then audited
/// (`key.activate`, `key.retire`, `key.revoke`) when there is an audit log.
public struct KeyAdministration: Sendable {
    /// A change of one key's state.
    public enum Change: String, Sendable, CaseIterable {
        case activate
        case retire
        case revoke
    }

    let manager: KeyManager
    let audit: (any AuditLog)?
    let signatureCounts: @Sendable () -> [String: Int]

    /// - Parameters:
    ///   - manager: the keys and the states admins set.
    ///   - audit: where changes of state are audited; `nil`: nowhere (no store).
    ///   - signatureCounts: the signatures this process made, by key identifier.
    public init(manager: KeyManager, audit: (any AuditLog)?, signatureCounts: @escaping @Sendable () -> [String: Int]) {
        self.manager = manager
        self.audit = audit
        self.signatureCounts = signatureCounts
    }

    /// The keys as they serve.
    public var keyRing: KeyRing {
        get async { await manager.keyRing }
    }

    /// Signatures made with each key by this process since it started, by key identifier.
    public var signatureCountsByKey: [String: Int] { signatureCounts() }

    /// Reloads the keys from their files. The new keys serve from here on: a history entry that cannot be saved is
    /// logged, not reported as a failed reload.
    /// - Throws: ``KeyManagementError`` when the reload is refused (the keys in use keep serving).
    public func reload(by admin: String, logger: Logger) async throws(KeyManagementError) -> KeyRing {
        let ring = try await manager.reload(reason: "admin \(admin)")
        do {
            try await manager.recordReload(by: admin)
        } catch {
            logger.warning("keys reloaded, but the reload could not be added to the key-state history", metadata: ["admin": "\(admin)"])
        }
        return ring
    }

    /// Changes one key's state and audits it as `key.<change>` (with `via` in its details when given: `console`).
    /// The change is saved (with its history entry) and served: an audit row that cannot be written is logged, never
    /// reported as a failed change.
    /// - Throws: what the key manager throws (``KeyManagementError``: unknown key, conflict, store unavailable).
    public func change(
        _ change: Change,
        keyIdentifier: String,
        by admin: String,
        via: String? = nil,
        logger: Logger
    ) async throws -> KeyRing {
        let ring: KeyRing
        switch change {
        case .activate: ring = try await manager.activate(keyIdentifier, by: admin)
        case .retire: ring = try await manager.retire(keyIdentifier, by: admin)
        case .revoke: ring = try await manager.revoke(keyIdentifier, by: admin)
        }
        if let audit {
            do {
                let details = via.map { ["via": $0] } ?? [:]
                try await audit.appendAudit(AuditEvent(actor: admin, action: "key.\(change.rawValue)", target: keyIdentifier, details: details))
            } catch {
                logger.warning(
                    "key state changed, but the audit event could not be written",
                    metadata: ["admin": "\(admin)", "action": "\(change.rawValue)", "keyIdentifier": "\(keyIdentifier)"]
                )
            }
        }
        return ring
    }
}
