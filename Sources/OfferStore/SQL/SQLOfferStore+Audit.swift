import Foundation
import Logging
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: audit, documents, health

    func appendAudit(_ event: AuditEvent) async throws {
        let details = try StoreCoding.encode(event.details)
        try await backend.transaction { database in
            try await database.insert(into: "audit_events").columns("id", "at", "actor", "action", "target", "details")
                .values(
                    SQLBind(event.id),
                    SQLBind(event.at.unixMilliseconds),
                    SQLBind(event.actor),
                    SQLBind(event.action),
                    SQLBind(event.target),
                    SQLBind(details)
                )
                .run()
        }
    }

    func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent] {
        try await auditEvents(limit: limit, since: since, until: nil, actions: nil)
    }

    func auditEvents(limit: Int, since: Date?, until: Date?, actions: Set<String>?) async throws -> [AuditEvent] {
        if actions?.isEmpty == true { return [] }
        let rows = try await backend.reading { database in
            var select = database.select().columns("id", "at", "actor", "action", "target", "details").from("audit_events")
                .where("at", .greaterThanOrEqual, (since ?? Date(timeIntervalSince1970: 0)).unixMilliseconds)
            if let until { select = select.where("at", .lessThan, until.unixMilliseconds) }
            if let actions { select = select.where("action", .in, actions.sorted()) }
            return try await select.orderBy("at", .descending).orderBy("id").limit(limit).all(decoding: AuditRow.self)
        }
        return try rows.map { row in
            AuditEvent(
                id: row.id,
                at: Date(unixMilliseconds: row.at),
                actor: row.actor,
                action: row.action,
                target: row.target,
                details: try StoreCoding.decode([String: String].self, from: row.details)
            )
        }
    }

    /// An `audit_events` row as stored.
    private struct AuditRow: Decodable, Sendable {
        var id: String, at: Int64, actor: String, action: String, target: String, details: String
    }

    func document(named name: String) async throws -> StoredDocument? {
        try await backend.reading { database in
            try await database.select().column("body").column("version").from("documents").where("name", .equal, name)
                .first(decoding: DocumentRow.self).map { StoredDocument(text: $0.body, version: $0.version) }
        }
    }

    /// A `documents` row as read.
    private struct DocumentRow: Decodable, Sendable {
        var body: String, version: Int64
    }

    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool {
        guard version >= 1 else { return false }
        return try await backend.transaction { database in
            let now = Date().unixMilliseconds
            let updated = try await database.update("documents")
                .set("body", to: SQLBind(text)).set("version", to: SQLBind(version)).set("updated_at", to: SQLBind(now))
                .where("name", .equal, name).where("version", .equal, version - 1)
                .returning("name").first()
            var changed = updated != nil
            if !changed, version == 1 {
                changed =
                    try await database.insert(into: "documents").columns("name", "body", "version", "updated_at")
                    .values(SQLBind(name), SQLBind(text), SQLBind(version), SQLBind(now))
                    .ignoringConflicts(with: "name")
                    .returning("name").first() != nil
            }
            // Delivered to every replica's listener when this transaction commits (``PostgresDocumentFeed``).
            if changed, documentFeed != nil {
                try await database.raw("SELECT pg_notify(\(bind: PostgresDocumentFeed.channel), \(bind: name))").run()
            }
            return changed
        }
    }

    func documentChanges() -> AsyncStream<String> {
        documentFeed?.changes() ?? AsyncStream { $0.finish() }
    }

    func warmUp() async {
        await backend.warmUp()
    }

    func ping() async throws {
        try await backend.reading { database in try await database.run("SELECT 1") }
    }

    func close() async throws {
        documentFeed?.close()
        await claimRecorder?.close()
        await recorder.close()
        await checkedRecorder?.close()
        await decisionRecorder.close()
        await retentionAnswerRecorder.close()
        await notificationRecorder.close()
        try await backend.close()
    }
}
