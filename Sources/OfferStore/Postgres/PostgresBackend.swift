import Foundation
import Logging
import NIOPosix
import OfferModel
import PostgresKit
import PostgresNIO
import SQLKit
import Synchronization

/// The shared database: PostgreSQL, for several replicas behind a load balancer.
///
/// Owns a postgres-nio `PostgresClient` (a connection pool, through ``PostgresConnections``: every lease waits at most
/// the store's wait limit, and a fresh pool serves as soon as the database answers after an outage) and runs it in a
/// task of its own from `init` until ``close()``, on an event-loop thread of its own where the group-commit writer
/// runs too. Commits are durable with PostgreSQL's default `synchronous_commit = on`.
final class PostgresBackend: SQLStoreBackend {
    private let connections: PostgresConnections
    private let logger: Logger
    /// The connections ``warmUp()`` opens and prepares the hot statements on (a pool that keeps them open; else none).
    private let connectionsKeptOpen: Int
    /// The connections' one thread, so that a batch's answer is read and the next batch sent without waiting for
    /// the HTTP event loops' signing work.
    private let eventLoops: MultiThreadedEventLoopGroup
    /// The group-commit writer task runs on that thread: no hop between threads from one batch's answer to the next.
    let batchExecutor: (any TaskExecutor)?

    let name = "PostgreSQL"
    let beginTransaction = "BEGIN"
    let writesInCommonTableExpressions = true
    let batchInTransaction = false
    /// A customer's transaction commits without waiting for the WAL flush (its row lock released at once), then a
    /// transaction that writes one WAL record and commits synchronously flushes the WAL up to it — past the first's
    /// commit, which came before it. (A transaction that writes nothing commits without a flush, whatever
    /// `synchronous_commit` says.)
    let commitBeforeFlush: (begin: String, flush: String)? = (
        "SET LOCAL synchronous_commit TO off", "SELECT pg_logical_emit_message(true, 'offer-signer-flush', '')"
    )
    /// A batch is sixteen array parameters whatever its size (``PostgresIssuedBatch``); the bound keeps one
    /// statement's size, and what one failed statement fails, in check.
    let recordsPerBatch = 1000
    /// The rate limits every replica on the database shares (``PostgresSharedLimits``).
    let sharedLimits: (any SharedLimitStore)?

    /// Connects (lazily: the first query opens the first connection).
    /// `keepingConnectionsOpen` (a server): connections stay open an hour after their last use, instead of a
    /// minute, and ``warmUp()`` opens and prepares the pool's maximum of them (``connectionLimit`` unless the URL's
    /// `pool_max_conns` says otherwise).
    /// `waitLimit`: how long a statement waits for a connection before it fails `unavailable` (``PostgresConnections``).
    init(configuration: PostgresClient.Configuration, logger: Logger, keepingConnectionsOpen: Bool = false, waitLimit: Duration = defaultStoreTimeout)
    {
        var configuration = configuration
        // Not a minimum the pool must keep: should the server refuse some connections, a pool below its minimum
        // queues every lease until it has them all.
        if keepingConnectionsOpen { configuration.options.connectionIdleTimeout = .seconds(3600) }
        let eventLoops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.eventLoops = eventLoops
        self.batchExecutor = EventLoopTaskExecutor(eventLoops.next())
        let connections = PostgresConnections(configuration: configuration, eventLoopGroup: eventLoops, logger: logger, waitLimit: waitLimit)
        self.connections = connections
        self.logger = logger
        self.connectionsKeptOpen = keepingConnectionsOpen ? configuration.options.maximumConnections : 0
        self.preparedAnswerStatements = PostgresAnswers.statements(connections)
        self.sharedLimits = PostgresSharedLimits(connections: connections)
        self.retentionAnswersWriter = { answers in try await PostgresAnswers.recordRetentionAnswers(answers, client: connections) }
        // One read in flight at a time: the reads asked for meanwhile go together in the next, so a burst costs fewer
        // leases of the pool (each release arms the pool's idle and keep-alive timers, tasks of their own) and
        // statements. With a policy under 32 connections: 167-171 against 180-204 µs a request, three alternations
        // (docs/store.md, "One customer at a time").
        // The reads that waited are read on one lease, batch after batch (``GroupRead/batchesPerHold`` at most): a
        // lease of the pool costs tasks of its own, and under load a batch is ready as the one before ends.
        self.snapshotReads = GroupRead(
            maxInFlight: 1,
            executor: batchExecutor,
            holding: { [logger] batches in
                try await connections.withConnection { connection in
                    try await batches { requests in try await PostgresCustomerDecisions.snapshots(requests, on: connection, logger: logger) }
                }
            },
            read: { requests in try await PostgresCustomerDecisions.snapshots(requests, client: connections) }
        )
    }

    /// Opens the connections the pool keeps open (``connectionsKeptOpen``) and prepares the signing and retention paths'
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
                    group.addTask { [connections, logger] in
                        try await connections.withConnection { connection in
                            try await PostgresAnswers.prepare(on: connection, logger: logger)
                            try await PostgresIssuedBatch.prepare(on: connection, logger: logger)
                            try await PostgresCustomerDecisions.prepare(on: connection, logger: logger)
                            try await PostgresDecisionBatch.prepare(on: connection, logger: logger)
                            try await PostgresNotificationBatch.prepare(on: connection, logger: logger)
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
            logger.warning(
                "the database connections could not be prepared ahead of the first requests; each prepares its statements at first use",
                metadata: ["reason": "\(describe(error))"]
            )
        }
    }

    /// The connections a store opens at most unless its URL's `pool_max_conns` says otherwise (a server opens them all
    /// at start-up: ``warmUp()``).
    static let connectionLimit = 8

    /// Parses `postgres://USER:PASSWORD@HOST:PORT/DATABASE[?sslmode=disable|prefer|require][&pool_max_conns=N]`
    /// (`pool_max_conns`: the pool's connections at most, 1 to 100, ``connectionLimit`` by default).
    /// - Throws: ``OfferStoreError`` `invalidDatabaseURL`, never repeating the password.
    static func configuration(databaseURL: String) throws(OfferStoreError) -> PostgresClient.Configuration {
        guard let components = URLComponents(string: databaseURL), let host = components.host, !host.isEmpty,
            let user = components.user, !user.isEmpty
        else {
            throw OfferStoreError(
                .invalidDatabaseURL,
                "OFFER_SIGNER_DATABASE_URL is not a PostgreSQL URL of the form postgres://USER:PASSWORD@HOST:5432/DATABASE."
            )
        }
        if let port = components.port, !(1...65_535).contains(port) {
            throw OfferStoreError(
                .invalidDatabaseURL,
                "OFFER_SIGNER_DATABASE_URL: the port must be 1 to 65535 (PostgreSQL listens on 5432 unless told otherwise)."
            )
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require", "verify-full": tls = .require(.makeClientConfiguration())
        default:
            throw OfferStoreError(.invalidDatabaseURL, "OFFER_SIGNER_DATABASE_URL: sslmode is disable, prefer or require.")
        }
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: user,
            password: components.password,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = connectionLimit
        if let text = components.queryItems?.first(where: { $0.name == "pool_max_conns" })?.value {
            guard let count = Int(text), (1...100).contains(count) else {
                throw OfferStoreError(
                    .invalidDatabaseURL,
                    """
                    OFFER_SIGNER_DATABASE_URL: pool_max_conns is the number of connections the pool opens at most, 1 to 100 (\(connectionLimit) \
                    when not given).
                    """
                )
            }
            configuration.options.maximumConnections = count
        }
        return configuration
    }

    /// What went wrong, in plain words: the server's message, else what happened to the connection.
    func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else {
            return error is CancellationError ? "the operation was cancelled" : "the database did not answer as expected"
        }
        if let message = error.serverInfo?[.message] { return message }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return "the connection to the database was closed; its last statement's outcome is unknown"
        case .connectionError:
            return "the database could not be reached"
        case .poolClosed:
            return "the store is closed"
        case .queryCancelled:
            return "the statement was cancelled"
        default:
            return "the database did not answer as expected"
        }
    }

    func isUniqueViolation(_ error: any Error) -> Bool {
        (error as? PSQLError)?.isUniqueViolation == true
    }

    /// PostgreSQL's batch is one statement from a task (``issuedSignatureBatchRun``), its own transaction.
    let issuedSignatureWriter: IssuedSignatureWriter? = nil

    let preparedAnswerStatements: PreparedAnswerStatements?
    let retentionAnswersWriter: (@Sendable ([RetentionAnswerRecord]) async throws -> Void)?

    func migrationStatements(version: Int) -> [SQLQueryString] {
        switch version {
        case 12: [SQLQueryString(PostgresAnswers.recordRetentionAnswersFunction)]
        case 20: [SQLQueryString(PostgresSharedLimits.table), SQLQueryString(PostgresSharedLimits.index)]
        case 22: [SQLQueryString(PostgresCustomerDecisions.recordCheckedFunction)]
        case 23: [SQLQueryString(PostgresNotificationBatch.lockFunction), SQLQueryString(PostgresNotificationBatch.writeFunction)]
        default: []
        }
    }

    /// ``PostgresIssuedBatch``: one prepared statement, the batch bound as arrays; every batch of a writer's run on
    /// one connection leased for the run (a lease and release per batch would also start and cancel the pool's
    /// idle and keep-alive timers, tasks on the shared pool, each time).
    var issuedSignatureBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.BatchInsert) async -> Void) async -> Void)? {
        { [connections] batches in await Self.batchRun(connections, insert: PostgresIssuedBatch.insert, batches) }
    }

    var checkedBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.CheckedBatchInsert) async -> Void) async -> Void)? {
        { [connections] batches in await Self.batchRun(connections, insert: PostgresCustomerDecisions.insert, batches) }
    }

    /// ``PostgresDecisionBatch``: one prepared statement, the batch bound as arrays, one round trip.
    var decisionBatchWriter: (@Sendable ([PolicyDecisionRecord]) async throws -> Void)? {
        { [connections] records in try await PostgresDecisionBatch.write(records, client: connections) }
    }

    /// ``PostgresNotificationBatch``: the batch in two prepared statements on the transaction's connection.
    var notificationBatchFiler: (@Sendable ([PendingFiling], any SQLDatabase) async throws -> [NotificationFiled])? {
        { [notificationBatches] batch, database in
            guard let open = database as? OpenConnectionDatabase else {
                throw OfferStoreError(.unavailable, "PostgreSQL store: the notifications' batch has no connection of its own.")
            }
            let filed = try await PostgresNotificationBatch.file(batch, connection: open.connection)
            notificationBatches.count.withLock { $0 += 1 }
            return filed
        }
    }

    /// How many notification batches ``notificationBatchFiler`` filed (tests: a burst took the two statements).
    var notificationBatchesFiled: Int { notificationBatches.count.withLock { $0 } }
    private let notificationBatches = LeaseCount()

    /// The decisions' reads, gathered into one statement when many are asked for at once (``GroupRead``).
    let snapshotReads: GroupRead<PostgresCustomerDecisions.SnapshotRequest, PostgresCustomerDecisions.SnapshotAnswer>

    var customerSnapshotRead: (@Sendable (_ key: CustomerKey, _ since: Int64) async throws -> (facts: String?, issued: [IssuedSignature]))? {
        { [snapshotReads] key, since in try await snapshotReads.answer(PostgresCustomerDecisions.SnapshotRequest(key: key, since: since)) }
    }

    func lockIssued(_ key: CustomerKey, on database: any SQLDatabase) async throws {
        try await database.raw(PostgresCustomerDecisions.lockStatement(for: key)).run()
    }

    /// One run of a group-commit writer: every batch of the run inserted with `insert` on one connection leased for
    /// the run.
    private static func batchRun<Item: Sendable>(
        _ connections: PostgresConnections,
        insert: @escaping @Sendable ([Item], PostgresConnection) async throws -> Set<SQLOfferStore.RecordIdentity>,
        _ batches: @Sendable (_ insert: @escaping @Sendable ([Item]) async throws -> Set<SQLOfferStore.RecordIdentity>) async -> Void
    ) async {
        do {
            try await connections.withConnection { connection in
                await batches { records in
                    // A connection that closed during the run (the server ended it): this batch and the rest
                    // of the run lease one each, as a run would. One a batch found ended is closed at once, so
                    // that the pool does not lend it to the next run before it has seen it close.
                    guard connection.isClosed else {
                        do {
                            return try await insert(records, connection)
                        } catch let error as PSQLError where PostgresConnections.endsConnection(error) {
                            try? await connection.close()
                            throw error
                        }
                    }
                    return try await connections.withConnection { try await insert(records, $0) }
                }
            }
        } catch {
            // No connection could be leased (nothing ran): the run's batches fail with why.
            await batches { _ in throw error }
        }
    }

    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await connections.withConnection { connection in try await body(OpenConnectionDatabase(connection)) }
    }

    func write<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await read(body)  // a leased connection is this caller's alone until it is released
    }

    /// How many checks of the database work on the connections set off (tests).
    var checksStarted: Int { connections.checksStarted }

    func patiently<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await connections.withConnection(patient: true) { connection in try await body(OpenConnectionDatabase(connection)) }
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
        await connections.close()
        try await eventLoops.shutdownGracefully()
    }
}

/// How many of ``PostgresBackend/warmUp()``'s leases hold a connection; how many notification batches were filed.
private final class LeaseCount: Sendable {
    let count = Mutex(0)
}

extension PSQLError {
    /// SQLSTATE 23505, `unique_violation`: the server refused the statement (not a lost connection, whose
    /// statement's outcome would be unknown).
    var isUniqueViolation: Bool { serverInfo?[.sqlState] == "23505" }
}
