import Foundation
import Logging
import OfferModel
import PostgresKit
import PostgresNIO
import SQLKit
import Synchronization

/// The shared database: PostgreSQL, for several replicas behind a load balancer.
///
/// Owns a postgres-nio `PostgresClient` (a connection pool) and runs it in a task of its own from `init` until
/// ``close()``. Commits are durable with PostgreSQL's default `synchronous_commit = on`.
final class PostgresBackend: SQLStoreBackend {
    private let client: PostgresClient
    private let running: Task<Void, Never>
    private let logger: Logger
    /// The connections the pool keeps open, idle or not (``warmUp()`` prepares the hot statements on each).
    private let connectionsKeptOpen: Int

    let name = "PostgreSQL"
    let beginTransaction = "BEGIN"
    let writesInCommonTableExpressions = true
    let batchInTransaction = false
    /// A customer's transaction commits without waiting for the WAL flush (its row lock released at once), then a
    /// transaction that writes one WAL record and commits synchronously flushes the WAL up to it — past the first's
    /// commit, which came before it. (A transaction that writes nothing commits without a flush, whatever
    /// `synchronous_commit` says.)
    let commitBeforeFlush: (begin: String, flush: String)? = (
        "SET LOCAL synchronous_commit TO off", "SELECT pg_logical_emit_message(true, 'offer-signer-flush', '')")
    /// A batch is sixteen array parameters whatever its size (``PostgresIssuedBatch``); the bound keeps one
    /// statement's size, and what one failed statement fails, in check.
    let recordsPerBatch = 1000

    /// Connects (lazily: the first query opens the first connection).
    init(configuration: PostgresClient.Configuration, logger: Logger) {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.connectionsKeptOpen = configuration.options.minimumConnections
        self.preparedAnswerStatements = PostgresAnswers.statements(client)
        self.retentionAnswersWriter = { answers in try await PostgresAnswers.recordRetentionAnswers(answers, client: client) }
        self.running = Task { await client.run() }
    }

    /// Opens the connections the pool keeps (``connectionsKeptOpen``) and prepares the signing and retention paths'
    /// statements on each (``PostgresAnswers/prepare(on:logger:)``, ``PostgresIssuedBatch/prepare(on:logger:)``):
    /// without it the first requests after start-up, all at once, wait while the pool opens its connections and
    /// each new server process reads the catalog and plans the statements (Apple's retention performance test
    /// sends 32 at once). Each connection is held until every one is leased (at most two seconds), so that each
    /// lease warms another. A failure is logged: the statements are then prepared at their first use.
    func warmUp() async {
        let count = connectionsKeptOpen
        guard count > 0 else { return }
        let leased = LeaseCount()
        let deadline = ContinuousClock.now + .seconds(2)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask { [client, logger] in
                        try await client.withConnection { connection in
                            try await PostgresAnswers.prepare(on: connection, logger: logger)
                            try await PostgresIssuedBatch.prepare(on: connection, logger: logger)
                            leased.count.withLock { $0 += 1 }
                            while leased.count.withLock({ $0 }) < count, ContinuousClock.now < deadline {
                                try await Task.sleep(for: .milliseconds(1))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            logger.warning("the database connections could not be prepared ahead of the first requests; each prepares its statements at first use", metadata: ["reason": "\(describe(error))"])
        }
    }

    /// The connections a store opens at most (a server keeps them all open: ``warmUp()``).
    static let connectionLimit = 8

    /// Parses `postgres://USER:PASSWORD@HOST:PORT/DATABASE[?sslmode=disable|prefer|require]`.
    /// - Throws: ``OfferStoreError`` `invalidDatabaseURL`, never repeating the password.
    /// `keepingConnectionsOpen`: all ``connectionLimit`` connections stay open while idle (``warmUp()``).
    static func configuration(databaseURL: String, keepingConnectionsOpen: Bool = false) throws -> PostgresClient.Configuration {
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
        configuration.options.maximumConnections = connectionLimit
        if keepingConnectionsOpen { configuration.options.minimumConnections = connectionLimit }
        return configuration
    }

    func describe(_ error: any Error) -> String {
        (error as? PSQLError)?.serverInfo?[.message] ?? "\(type(of: error))"
    }

    /// SQLSTATE 23505, `unique_violation`: the server refused the statement (not a lost connection, whose
    /// statement's outcome would be unknown).
    func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PSQLError)?.serverInfo?[.sqlState] == "23505"
    }

    /// PostgreSQL's batch is one statement from a task (``issuedSignatureBatchInsert``), its own transaction.
    let issuedSignatureWriter: IssuedSignatureWriter? = nil

    let preparedAnswerStatements: PreparedAnswerStatements?
    let retentionAnswersWriter: (@Sendable ([RetentionAnswerRecord]) async throws -> Void)?

    func migrationStatements(version: Int) -> [SQLQueryString] {
        version == 12 ? [SQLQueryString(PostgresAnswers.recordRetentionAnswersFunction)] : []
    }

    /// ``PostgresIssuedBatch``: one prepared statement, the batch bound as arrays.
    var issuedSignatureBatchInsert: (@Sendable ([IssuedSignature]) async throws -> Set<SQLOfferStore.RecordIdentity>)? {
        { [client] records in try await PostgresIssuedBatch.insert(records, client: client) }
    }

    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await client.withConnection { connection in try await body(connection.sql(queryLogLevel: nil)) }
    }

    func write<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await read(body)  // a leased connection is this caller's alone until it is released
    }

    /// One migrator at a time across replicas, until the migration's transaction ends.
    func lockSubscriptionOutcomes(_ originalTransactionId: String, environment: String, on database: any SQLDatabase) async throws {
        // Two-key advisory lock: the first key names the outcome tables, the second the subscription.
        try await database.raw("SELECT pg_advisory_xact_lock(72453652, hashtext(\(bind: environment + ":" + originalTransactionId)))").run()
    }

    func lockMigrations(on database: any SQLDatabase) async throws {
        try await database.run("SELECT pg_advisory_xact_lock(7245365137)")
    }

    func close() async throws {
        running.cancel()
        await running.value
    }
}

/// How many of ``PostgresBackend/warmUp()``'s leases hold a connection.
private final class LeaseCount: Sendable {
    let count = Mutex(0)
}
