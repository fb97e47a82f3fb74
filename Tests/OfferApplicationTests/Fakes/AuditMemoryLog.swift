import Foundation
import OfferModel
import OfferStore
import Synchronization

/// The audit log in memory: a fake of the ``AuditLog`` capability. `failing` makes appends throw, as an
/// unreachable store would.
final class AuditMemoryLog: AuditLog {
    struct Unreachable: Error {}

    private let events = Mutex<[AuditEvent]>([])
    private let failure = Mutex(false)

    /// Makes every later append throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    /// Every event appended, oldest first.
    var appended: [AuditEvent] { events.withLock { $0 } }

    func appendAudit(_ event: AuditEvent) async throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
        events.withLock { $0.append(event) }
    }

    func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent] {
        try await auditEvents(limit: limit, since: since, until: nil, actions: nil)
    }

    func auditEvents(limit: Int, since: Date?, until: Date?, actions: Set<String>?) async throws -> [AuditEvent] {
        events.withLock { events in
            Array(
                events.reversed()
                    .filter { event in
                        (since.map { event.at >= $0 } ?? true) && (until.map { event.at < $0 } ?? true)
                            && (actions.map { $0.contains(event.action) } ?? true)
                    }
                    .prefix(limit)
            )
        }
    }
}
