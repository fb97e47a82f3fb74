import Logging
import OfferModel
import OfferStore

/// How an admin's change is audited: a row in the audit log, which keeps the target (admins query it), and a log
/// line, which names the target only by what `logTarget` gives (a customer's hash, never the customer;
/// docs/observability.md).
public struct AuditTrail: Sendable {
    let log: any AuditLog

    /// An audit trail writing to `log`.
    public init(log: any AuditLog) {
        self.log = log
    }

    /// Appends `event` to the audit log, then logs it.
    /// - Throws: ``OfferServiceError`` `store_unavailable` when the row cannot be written (nothing is logged).
    func record(_ event: AuditEvent, logTarget: String, logger: Logger) async throws(OfferServiceError) {
        try await storeCall { try await log.appendAudit(event) }
        logger.notice("audit: \(event.action)", metadata: ["admin": "\(event.actor)", "target": "\(logTarget)"])
    }
}
