import Foundation
import OfferModel
import OfferStore

/// The logs admins read (`/admin/signatures`, `/admin/audit`): the issued signatures and the audit events.
public struct AdministrationLogs: Sendable {
    let signatures: any IssuedSignatureLog
    let audit: any AuditLog

    /// - Parameters:
    ///   - signatures: the issued-signature log.
    ///   - audit: the audit log.
    public init(signatures: any IssuedSignatureLog, audit: any AuditLog) {
        self.signatures = signatures
        self.audit = audit
    }

    /// The issued signatures the query matches, newest first.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func issuedSignatures(matching query: IssuedSignatureQuery) async throws(OfferServiceError) -> [IssuedSignature] {
        try await storeCall { try await signatures.issuedSignatures(matching: query) }
    }

    /// The newest `limit` audit events.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func auditEvents(limit: Int) async throws(OfferServiceError) -> [AuditEvent] {
        try await storeCall { try await audit.auditEvents(limit: limit, since: nil) }
    }

    /// The newest `limit` audit events from `from` (included) to `to` (excluded), of `actions` only (the console's
    /// charts mark key and policy changes).
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func auditEvents(limit: Int, from: Date, to: Date, actions: Set<String>) async throws(OfferServiceError) -> [AuditEvent] {
        try await storeCall { try await audit.auditEvents(limit: limit, since: from, until: to, actions: actions) }
    }
}
