import Foundation
import Logging
import NIOCore
import SQLiteNIO

/// The embedded store: one SQLite file, nothing to install (the default).
///
/// ## Durability and group commit
///
/// The file is in WAL mode with `synchronous=FULL`: a transaction is on disk (the WAL fsynced) when COMMIT
/// returns, so a killed process — or a power cut — loses nothing that was acknowledged. `record(_:)` does not
/// pay one fsync per signature: callers queue their records, one writer task takes everything queued, inserts
/// it in a single transaction and commits once, then resumes every waiting caller. Under load the batch grows
/// while the previous commit is being flushed; when idle a record is written at once.
///
/// All writes go through one connection, one transaction at a time (an ``AsyncGate``); reads of a file store
/// use a second connection, which WAL lets read while a write is in progress.
public final class SQLiteOfferStore: OfferStore, Sendable {
    private let writer: SQLiteConnection
    private let reader: SQLiteConnection
    private let writeGate = AsyncGate()
    private let readGate: AsyncGate
    private let logger: Logger
    private let recorder = GroupCommitQueue<IssuedSignature>(maximumBatch: SQLiteOfferStore.recordsPerBatch)

    /// Opens (or creates) the store.
    /// - Parameter path: the file; `nil` for an in-memory store (tests, `serve --demo`).
    public init(path: String?, logger: Logger) async throws {
        self.logger = logger
        do {
            if let path {
                writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
                _ = try await writer.query("PRAGMA journal_mode=WAL")
                _ = try await writer.query("PRAGMA synchronous=FULL")
                _ = try await writer.query("PRAGMA busy_timeout=5000")
                reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
                _ = try await reader.query("PRAGMA busy_timeout=5000")
                readGate = AsyncGate()
            } else {
                writer = try await SQLiteConnection.open(storage: .memory, logger: logger)
                reader = writer
                readGate = writeGate
            }
        } catch {
            throw OfferStoreError(code: .unavailable, message: "Cannot open the SQLite store\(path.map { " at \($0)" } ?? ""): \(Self.describe(error)).")
        }
        recorder.setWriter { [weak self] records in
            guard let self else { throw OfferStoreError(code: .unavailable, message: "The SQLite store is closed.") }
            return try await self.insert(records)
        }
    }

    deinit {
        // A store dropped without close() (a test that never ran the service) still closes its connections:
        // the future-based close keeps each connection alive until it is done.
        if !reader.isClosed, reader !== writer { _ = reader.close() }
        if !writer.isClosed { _ = writer.close() }
    }

    static func describe(_ error: any Error) -> String {
        (error as? SQLiteError)?.message ?? "\(type(of: error))"
    }

    // MARK: migrations

    static let migrations = StoreSchema.migrations(integer64: "INTEGER")

    public func migrate() async throws {
        let writer = self.writer
        try await writeGate.withGate {
            do {
                _ = try await writer.query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)")
                let applied = Set(try await writer.query("SELECT version FROM schema_migrations").compactMap { $0.column("version")?.integer })
                for migration in Self.migrations where !applied.contains(migration.version) {
                    _ = try await writer.query("BEGIN IMMEDIATE")
                    do {
                        for statement in migration.statements { _ = try await writer.query(statement) }
                        _ = try await writer.query("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", [.integer(migration.version), .integer(Int(Date().timeIntervalSince1970))])
                        _ = try await writer.query("COMMIT")
                    } catch {
                        _ = try? await writer.query("ROLLBACK")
                        throw error
                    }
                }
            } catch {
                throw OfferStoreError(code: .migrationFailed, message: "SQLite migration failed: \(Self.describe(error)).")
            }
        }
    }

    // MARK: customers

    public func customerFacts(for key: CustomerKey) async throws -> CustomerFacts? {
        let reader = self.reader
        let rows = try await readGate.withGate {
            try await Self.unavailable {
                try await reader.query("SELECT facts FROM customers WHERE bundle_identifier = ? AND application_username = ?", [.text(key.bundleIdentifier), .text(key.applicationUsername)])
            }
        }
        guard let text = rows.first?.column("facts")?.string else { return nil }
        return try StoreCoding.decode(CustomerFacts.self, from: text)
    }

    public func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        let reader = self.reader
        let rows = try await readGate.withGate {
            try await Self.unavailable {
                try await reader.query("SELECT bundle_identifier, application_username FROM customer_transactions WHERE original_transaction_id = ? ORDER BY bundle_identifier, application_username", [.text(originalTransactionId)])
            }
        }
        return rows.compactMap { row in
            guard let bundle = row.column("bundle_identifier")?.string, let username = row.column("application_username")?.string else { return nil }
            return CustomerKey(bundleIdentifier: bundle, applicationUsername: username)
        }
    }

    @discardableResult
    public func updateCustomer(_ key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        try await transaction { connection in
            try await Self.update(key, on: connection, body)
        }
    }

    public func applyNotification(notificationUUID: String, to key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> Bool {
        try await transaction { connection in
            let seen = try await connection.query("SELECT 1 FROM processed_notifications WHERE notification_uuid = ?", [.text(notificationUUID)])
            guard seen.isEmpty else { return false }
            _ = try await connection.query("INSERT INTO processed_notifications (notification_uuid, processed_at) VALUES (?, ?)", [.text(notificationUUID), .integer(Int(Date().timeIntervalSince1970 * 1000))])
            _ = try await Self.update(key, on: connection, body)
            return true
        }
    }

    private static func update(_ key: CustomerKey, on connection: SQLiteConnection, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        let rows = try await connection.query("SELECT facts FROM customers WHERE bundle_identifier = ? AND application_username = ?", [.text(key.bundleIdentifier), .text(key.applicationUsername)])
        var facts = try rows.first?.column("facts")?.string.map { try StoreCoding.decode(CustomerFacts.self, from: $0) } ?? CustomerFacts(key: key)
        try body(&facts)
        facts.key = key
        facts.updatedAt = Date()
        _ = try await connection.query(
            "INSERT INTO customers (bundle_identifier, application_username, facts, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (bundle_identifier, application_username) DO UPDATE SET facts = excluded.facts, updated_at = excluded.updated_at",
            [.text(key.bundleIdentifier), .text(key.applicationUsername), .text(try StoreCoding.encode(facts)), .integer(Int(facts.updatedAt.timeIntervalSince1970 * 1000))])
        for original in Set(facts.subscriptions.compactMap(\.originalTransactionId)) {
            _ = try await connection.query(
                "INSERT OR IGNORE INTO customer_transactions (original_transaction_id, bundle_identifier, application_username) VALUES (?, ?, ?)",
                [.text(original), .text(key.bundleIdentifier), .text(key.applicationUsername)])
        }
        return facts
    }

    /// Runs `body` in one IMMEDIATE transaction on the writer, alone.
    private func transaction<T: Sendable>(_ body: @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        let writer = self.writer
        return try await writeGate.withGate {
            do {
                _ = try await writer.query("BEGIN IMMEDIATE")
            } catch {
                throw OfferStoreError(code: .unavailable, message: "SQLite store: \(Self.describe(error)).")
            }
            do {
                let value = try await body(writer)
                _ = try await writer.query("COMMIT")
                return value
            } catch {
                _ = try? await writer.query("ROLLBACK")
                if error is OfferStoreError { throw error }
                if error is SQLiteError { throw OfferStoreError(code: .unavailable, message: "SQLite store: \(Self.describe(error)).") }
                throw error
            }
        }
    }

    private static func unavailable<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw OfferStoreError(code: .unavailable, message: "SQLite store: \(describe(error)).")
        }
    }

    // MARK: issued signatures (group commit)

    public func record(_ signature: IssuedSignature) async throws {
        try await recorder.submit(signature)
    }

    /// Records in one batch: one multi-row statement holds them all (8 parameters a row; sqlite-nio builds
    /// SQLite with `SQLITE_MAX_VARIABLE_NUMBER=250000`, and 32,766 is SQLite's own default).
    static let recordsPerBatch = 500

    /// Inserts one batch in one IMMEDIATE transaction holding one multi-row
    /// `INSERT OR IGNORE … RETURNING nonce`: one statement and one commit (one WAL fsync) per batch. The
    /// explicit `BEGIN` fails if the writer were ever left inside a transaction, rather than letting the
    /// batch join it uncommitted. A nonce not returned was a duplicate and fails only its own record.
    private func insert(_ records: [IssuedSignature]) async throws -> [(any Error)?] {
        do {
            let binds: [SQLiteData] = records.flatMap { record in
                [.text(record.nonce), .text(record.keyIdentifier), .text(record.bundleIdentifier), .text(record.productIdentifier),
                 .text(record.offerIdentifier), .text(record.applicationUsername), .integer(Int(record.timestamp)), .text(record.format)]
            }
            let values = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: records.count).joined(separator: ", ")
            let rows = try await transaction { connection in
                try await connection.query(
                    "INSERT OR IGNORE INTO issued_signatures (nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format) VALUES \(values) RETURNING nonce",
                    binds)
            }
            var remaining = Set(rows.compactMap { $0.column("nonce")?.string })  // inserted, each claimed once
            return records.map { record in
                remaining.remove(record.nonce) != nil ? nil : OfferStoreError(code: .duplicateNonce, message: "A signature with nonce \(record.nonce) was recorded before.")
            }
        } catch {
            let failure = (error as? OfferStoreError) ?? OfferStoreError(code: .unavailable, message: "SQLite store: \(Self.describe(error)).")
            logger.error("issued-signature batch not recorded", metadata: ["count": "\(records.count)", "error": "\(failure.message)"])
            throw failure
        }
    }

    public func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature] {
        let (whereClause, binds) = Self.filter(query)
        let reader = self.reader
        let rows = try await readGate.withGate {
            try await Self.unavailable {
                try await reader.query("SELECT * FROM issued_signatures\(whereClause) ORDER BY timestamp DESC, nonce LIMIT ?", binds + [.integer(max(query.limit, 0))])
            }
        }
        return rows.compactMap { row in
            guard let nonce = row.column("nonce")?.string, let key = row.column("key_identifier")?.string,
                  let bundle = row.column("bundle_identifier")?.string, let product = row.column("product_identifier")?.string,
                  let offer = row.column("offer_identifier")?.string, let username = row.column("application_username")?.string,
                  let timestamp = row.column("timestamp")?.integer, let format = row.column("format")?.string else { return nil }
            return IssuedSignature(nonce: nonce, keyIdentifier: key, bundleIdentifier: bundle, productIdentifier: product, offerIdentifier: offer, applicationUsername: username, timestamp: Int64(timestamp), format: format)
        }
    }

    public func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int {
        let (whereClause, binds) = Self.filter(query)
        let reader = self.reader
        let rows = try await readGate.withGate {
            try await Self.unavailable { try await reader.query("SELECT COUNT(*) AS n FROM issued_signatures\(whereClause)", binds) }
        }
        return rows.first?.column("n")?.integer ?? 0
    }

    static func filter(_ query: IssuedSignatureQuery) -> (String, [SQLiteData]) {
        var clauses: [String] = []
        var binds: [SQLiteData] = []
        func add(_ column: String, _ value: String?) {
            guard let value else { return }
            clauses.append("\(column) = ?")
            binds.append(.text(value))
        }
        add("bundle_identifier", query.bundleIdentifier)
        add("application_username", query.applicationUsername)
        add("product_identifier", query.productIdentifier)
        add("offer_identifier", query.offerIdentifier)
        add("key_identifier", query.keyIdentifier)
        if let since = query.since {
            clauses.append("timestamp >= ?")
            binds.append(.integer(Int(since)))
        }
        if let until = query.until {
            clauses.append("timestamp < ?")
            binds.append(.integer(Int(until)))
        }
        return (clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND "), binds)
    }

    // MARK: audit, health

    public func appendAudit(_ event: AuditEvent) async throws {
        let details = try StoreCoding.encode(event.details)
        _ = try await transaction { connection in
            _ = try await connection.query(
                "INSERT INTO audit_events (id, at, actor, action, target, details) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(event.id), .integer(Int(event.at.timeIntervalSince1970 * 1000)), .text(event.actor), .text(event.action), .text(event.target), .text(details)])
            return true
        }
    }

    public func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent] {
        let reader = self.reader
        let sinceMilliseconds = Int((since?.timeIntervalSince1970 ?? 0) * 1000)
        let rows = try await readGate.withGate {
            try await Self.unavailable {
                try await reader.query("SELECT * FROM audit_events WHERE at >= ? ORDER BY at DESC, id LIMIT ?", [.integer(sinceMilliseconds), .integer(limit)])
            }
        }
        return try rows.compactMap { row in
            guard let id = row.column("id")?.string, let at = row.column("at")?.integer, let actor = row.column("actor")?.string,
                  let action = row.column("action")?.string, let target = row.column("target")?.string, let details = row.column("details")?.string else { return nil }
            return AuditEvent(id: id, at: Date(timeIntervalSince1970: Double(at) / 1000), actor: actor, action: action, target: target, details: try StoreCoding.decode([String: String].self, from: details))
        }
    }

    public func document(named name: String) async throws -> String? {
        let reader = self.reader
        let rows = try await readGate.withGate {
            try await Self.unavailable { try await reader.query("SELECT body FROM documents WHERE name = ?", [.text(name)]) }
        }
        return rows.first?.column("body")?.string
    }

    public func saveDocument(named name: String, _ text: String) async throws {
        _ = try await transaction { connection in
            _ = try await connection.query(
                "INSERT INTO documents (name, body, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
                [.text(name), .text(text), .integer(Int(Date().timeIntervalSince1970 * 1000))])
            return true
        }
    }

    public func ping() async throws {
        let reader = self.reader
        _ = try await readGate.withGate { try await Self.unavailable { try await reader.query("SELECT 1") } }
    }

    public func close() async throws {
        while recorder.isBusy { try await Task.sleep(for: .milliseconds(5)) }
        try await writeGate.withGate { [writer, reader] in
            if reader !== writer { try await reader.close() }
            try await writer.close()
        }
    }
}
