import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The shared store: PostgreSQL, for several replicas behind a load balancer.
///
/// The store owns a postgres-nio `PostgresClient` (a connection pool) and runs it in a task of its own from
/// `init` until ``close()``. Commits are durable with PostgreSQL's default `synchronous_commit = on`;
/// `record(_:)` batches concurrent callers into one multi-row INSERT and one commit (group commit), like
/// the SQLite store. Duplicate nonces are found with `ON CONFLICT DO NOTHING RETURNING`, so they fail only
/// their own caller.
public final class PostgresOfferStore: OfferStore, Sendable {
    private let client: PostgresClient
    private let running: Task<Void, Never>
    private let logger: Logger
    private let recorder = GroupCommitQueue<IssuedSignature>(maximumBatch: 1000)

    /// Connects (lazily: the first query opens the first connection).
    public init(configuration: PostgresClient.Configuration, logger: Logger) {
        self.logger = logger
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.running = Task { await client.run() }
        recorder.setWriter { [weak self] records in
            guard let self else { throw OfferStoreError(code: .unavailable, message: "The PostgreSQL store is closed.") }
            return try await self.insert(records)
        }
    }

    /// Parses `postgres://USER:PASSWORD@HOST:PORT/DATABASE[?sslmode=disable|require]`.
    /// - Throws: ``OfferStoreError`` `invalidDatabaseURL`, never repeating the password.
    public static func configuration(databaseURL: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: databaseURL), let host = components.host, !host.isEmpty,
              let user = components.user, !user.isEmpty
        else {
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL is not a PostgreSQL URL of the form postgres://USER:PASSWORD@HOST:5432/DATABASE.")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        default:
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL: sslmode is disable, prefer or require.")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = 8
        return configuration
    }

    static func unavailable(_ error: any Error) -> OfferStoreError {
        if let error = error as? OfferStoreError { return error }
        let detail = (error as? PSQLError)?.serverInfo?[.message] ?? "\(type(of: error))"
        return OfferStoreError(code: .unavailable, message: "PostgreSQL store: \(detail).")
    }

    private func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw Self.unavailable(error)
        }
    }

    // MARK: migrations

    static let migrations = StoreSchema.migrations(integer64: "BIGINT")

    public func migrate() async throws {
        do {
            try await client.withTransaction(logger: logger) { connection in
                // One migrator at a time across replicas.
                try await connection.query("SELECT pg_advisory_xact_lock(7245365137)", logger: logger)
                try await connection.query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)", logger: logger)
                var applied: Set<Int> = []
                for try await version in try await connection.query("SELECT version FROM schema_migrations", logger: logger).decode(Int.self) {
                    applied.insert(version)
                }
                for migration in Self.migrations where !applied.contains(migration.version) {
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    let now = Int64(Date().timeIntervalSince1970)
                    try await connection.query("INSERT INTO schema_migrations (version, applied_at) VALUES (\(migration.version), \(now))", logger: logger)
                }
            }
        } catch {
            throw OfferStoreError(code: .migrationFailed, message: "PostgreSQL migration failed: \(Self.unavailable(error).message)")
        }
    }

    // MARK: customers

    public func customerFacts(for key: CustomerKey) async throws -> CustomerFacts? {
        let text: String? = try await run {
            let rows = try await client.query("SELECT facts FROM customers WHERE bundle_identifier = \(key.bundleIdentifier) AND application_username = \(key.applicationUsername)", logger: logger)
            for try await facts in rows.decode(String.self) { return facts }
            return nil
        }
        return try text.map { try StoreCoding.decode(CustomerFacts.self, from: $0) }
    }

    public func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        try await run {
            var keys: [CustomerKey] = []
            let rows = try await client.query("SELECT bundle_identifier, application_username FROM customer_transactions WHERE original_transaction_id = \(originalTransactionId) ORDER BY bundle_identifier, application_username", logger: logger)
            for try await (bundle, username) in rows.decode((String, String).self) {
                keys.append(CustomerKey(bundleIdentifier: bundle, applicationUsername: username))
            }
            return keys
        }
    }

    @discardableResult
    public func updateCustomer(_ key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        try await run {
            try await client.withTransaction(logger: logger) { connection in
                try await Self.update(key, on: connection, logger: logger, body)
            }
        }
    }

    public func applyNotification(notificationUUID: String, to key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> Bool {
        try await run {
            try await client.withTransaction(logger: logger) { connection in
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                let inserted = try await connection.query(
                    "INSERT INTO processed_notifications (notification_uuid, processed_at) VALUES (\(notificationUUID), \(now)) ON CONFLICT DO NOTHING RETURNING notification_uuid",
                    logger: logger)
                var first = false
                for try await _ in inserted.decode(String.self) { first = true }
                guard first else { return false }
                _ = try await Self.update(key, on: connection, logger: logger, body)
                return true
            }
        }
    }

    private static func update(_ key: CustomerKey, on connection: PostgresConnection, logger: Logger, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        let empty = try StoreCoding.encode(CustomerFacts(key: key))
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await connection.query(
            "INSERT INTO customers (bundle_identifier, application_username, facts, updated_at) VALUES (\(key.bundleIdentifier), \(key.applicationUsername), \(empty), \(now)) ON CONFLICT DO NOTHING",
            logger: logger)
        var text = empty
        for try await facts in try await connection.query(
            "SELECT facts FROM customers WHERE bundle_identifier = \(key.bundleIdentifier) AND application_username = \(key.applicationUsername) FOR UPDATE",
            logger: logger).decode(String.self) {
            text = facts
        }
        var facts = try StoreCoding.decode(CustomerFacts.self, from: text)
        try body(&facts)
        facts.key = key
        facts.updatedAt = Date()
        let encoded = try StoreCoding.encode(facts)
        let updated = Int64(facts.updatedAt.timeIntervalSince1970 * 1000)
        try await connection.query(
            "UPDATE customers SET facts = \(encoded), updated_at = \(updated) WHERE bundle_identifier = \(key.bundleIdentifier) AND application_username = \(key.applicationUsername)",
            logger: logger)
        for original in Set(facts.subscriptions.compactMap(\.originalTransactionId)) {
            try await connection.query(
                "INSERT INTO customer_transactions (original_transaction_id, bundle_identifier, application_username) VALUES (\(original), \(key.bundleIdentifier), \(key.applicationUsername)) ON CONFLICT DO NOTHING",
                logger: logger)
        }
        return facts
    }

    // MARK: issued signatures (group commit)

    public func record(_ signature: IssuedSignature) async throws {
        try await recorder.submit(signature)
    }

    /// Inserts one batch (at most 1000 rows, 8000 parameters) in one statement; duplicates fail alone.
    private func insert(_ records: [IssuedSignature]) async throws -> [(any Error)?] {
        var bindings = PostgresBindings(capacity: records.count * 8)
        var rows: [String] = []
        rows.reserveCapacity(records.count)
        for (index, record) in records.enumerated() {
            let base = index * 8
            rows.append("($\(base + 1), $\(base + 2), $\(base + 3), $\(base + 4), $\(base + 5), $\(base + 6), $\(base + 7), $\(base + 8))")
            bindings.append(record.nonce)
            bindings.append(record.keyIdentifier)
            bindings.append(record.bundleIdentifier)
            bindings.append(record.productIdentifier)
            bindings.append(record.offerIdentifier)
            bindings.append(record.applicationUsername)
            bindings.append(record.timestamp)
            bindings.append(record.format)
        }
        let query = PostgresQuery(
            unsafeSQL: "INSERT INTO issued_signatures (nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format) VALUES \(rows.joined(separator: ", ")) ON CONFLICT (nonce) DO NOTHING RETURNING nonce",
            binds: bindings)
        do {
            var inserted: Set<String> = []
            for try await nonce in try await client.query(query, logger: logger).decode(String.self) { inserted.insert(nonce) }
            return records.map { record in
                inserted.remove(record.nonce) != nil ? nil : OfferStoreError(code: .duplicateNonce, message: "A signature with nonce \(record.nonce) was recorded before.")
            }
        } catch {
            let failure = Self.unavailable(error)
            logger.error("issued-signature batch not recorded", metadata: ["count": "\(records.count)", "error": "\(failure.message)"])
            throw failure
        }
    }

    static func filter(_ query: IssuedSignatureQuery) -> (String, PostgresBindings) {
        var clauses: [String] = []
        var bindings = PostgresBindings()
        func add(_ column: String, _ value: String?) {
            guard let value else { return }
            bindings.append(value)
            clauses.append("\(column) = $\(clauses.count + 1)")
        }
        add("bundle_identifier", query.bundleIdentifier)
        add("application_username", query.applicationUsername)
        add("product_identifier", query.productIdentifier)
        add("offer_identifier", query.offerIdentifier)
        add("key_identifier", query.keyIdentifier)
        if let since = query.since {
            bindings.append(since)
            clauses.append("timestamp >= $\(clauses.count + 1)")
        }
        if let until = query.until {
            bindings.append(until)
            clauses.append("timestamp < $\(clauses.count + 1)")
        }
        return (clauses.isEmpty ? "" : " WHERE " + clauses.joined(separator: " AND "), bindings)
    }

    public func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature] {
        var (whereClause, bindings) = Self.filter(query)
        bindings.append(Int64(max(query.limit, 0)))
        let sql = "SELECT nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format FROM issued_signatures\(whereClause) ORDER BY timestamp DESC, nonce LIMIT $\(bindings.count)"
        return try await run {
            var result: [IssuedSignature] = []
            let rows = try await client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
            for try await (nonce, key, bundle, product, offer, username, timestamp, format) in rows.decode((String, String, String, String, String, String, Int64, String).self) {
                result.append(IssuedSignature(nonce: nonce, keyIdentifier: key, bundleIdentifier: bundle, productIdentifier: product, offerIdentifier: offer, applicationUsername: username, timestamp: timestamp, format: format))
            }
            return result
        }
    }

    public func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int {
        let (whereClause, bindings) = Self.filter(query)
        return try await run {
            for try await count in try await client.query(PostgresQuery(unsafeSQL: "SELECT COUNT(*) FROM issued_signatures\(whereClause)", binds: bindings), logger: logger).decode(Int64.self) {
                return Int(count)
            }
            return 0
        }
    }

    // MARK: audit, health

    public func appendAudit(_ event: AuditEvent) async throws {
        let details = try StoreCoding.encode(event.details)
        let at = Int64(event.at.timeIntervalSince1970 * 1000)
        _ = try await run {
            try await client.query("INSERT INTO audit_events (id, at, actor, action, target, details) VALUES (\(event.id), \(at), \(event.actor), \(event.action), \(event.target), \(details))", logger: logger)
        }
    }

    public func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent] {
        let sinceMilliseconds = Int64((since?.timeIntervalSince1970 ?? 0) * 1000)
        let limit = Int64(limit)
        let rows: [(String, Int64, String, String, String, String)] = try await run {
            var rows: [(String, Int64, String, String, String, String)] = []
            for try await row in try await client.query("SELECT id, at, actor, action, target, details FROM audit_events WHERE at >= \(sinceMilliseconds) ORDER BY at DESC, id LIMIT \(limit)", logger: logger).decode((String, Int64, String, String, String, String).self) {
                rows.append(row)
            }
            return rows
        }
        return try rows.map { id, at, actor, action, target, details in
            AuditEvent(id: id, at: Date(timeIntervalSince1970: Double(at) / 1000), actor: actor, action: action, target: target, details: try StoreCoding.decode([String: String].self, from: details))
        }
    }

    public func document(named name: String) async throws -> String? {
        try await run {
            for try await body in try await client.query("SELECT body FROM documents WHERE name = \(name)", logger: logger).decode(String.self) {
                return body
            }
            return nil
        }
    }

    public func saveDocument(named name: String, _ text: String) async throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try await run {
            try await client.query("INSERT INTO documents (name, body, updated_at) VALUES (\(name), \(text), \(now)) ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body, updated_at = EXCLUDED.updated_at", logger: logger)
        }
    }

    public func ping() async throws {
        _ = try await run { try await client.query("SELECT 1", logger: logger) }
    }

    public func close() async throws {
        while recorder.isBusy { try await Task.sleep(for: .milliseconds(5)) }
        running.cancel()
        await running.value
    }
}

func makePostgresOfferStore(databaseURL: String, logger: Logger) async throws -> any OfferStore {
    let store = PostgresOfferStore(configuration: try PostgresOfferStore.configuration(databaseURL: databaseURL), logger: logger)
    try await store.migrate()
    return store
}
