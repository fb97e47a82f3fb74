import Foundation
import OfferModel

/// The audit log of what admins and the service did.
public protocol AuditLog: Sendable {
    /// Appends an audit event.
    func appendAudit(_ event: AuditEvent) async throws

    /// Audit events, newest first.
    func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent]

    /// Audit events at or after `since` and before `until` (`nil`: no bound), of these actions only (`nil`: every
    /// action; none: no event), newest first.
    func auditEvents(limit: Int, since: Date?, until: Date?, actions: Set<String>?) async throws -> [AuditEvent]
}
