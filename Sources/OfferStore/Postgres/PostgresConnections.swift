import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// A PostgreSQL backend's connections: a postgres-nio `PostgresClient` (a pool) whose every lease waits at most
/// ``waitLimit``, replaced by a fresh client as soon as the database answers again after an outage.
///
/// postgres-nio queues a lease for as long as its pool cannot connect, and retries on a backoff that grows to a
/// minute: left alone, a request waits out an outage and more, and after the database returns the pool may wait a
/// minute before it tries again. Here:
///
/// - a lease that waits longer than ``waitLimit`` fails with ``OfferStoreError`` `unavailable` (503
///   `store_unavailable` at the edge); one that has waited a quarter of it, or whose work on its connection has taken
///   half of it, or whose connection was lost, sets off a check;
/// - a check (at most one at a time) connects to the server's port (refused: down at once), then opens one connection
///   with a fresh client, within ``probeLimit``. When it cannot, and no other work completed on the pool meanwhile
///   (a server at its connection limit refuses new connections and serves the open ones), the database is **down**:
///   every lease fails at once, the pool's connections are closed (a statement stuck on a connection to a host that
///   went silent fails then, instead of when TCP gives up), and the port and a fresh connection are tried every
///   ``probeInterval`` until one answers; a fresh pool then serves. When it can, the database answers: a pool that
///   gave no connection within the limit although it had some free (stuck in its backoff) is replaced by a fresh one,
///   and a busy pool (all its connections leased) is left to its callers.
///
/// A replaced pool is closed once its last lease ends, so a long statement on it (a report) finishes. A connection
/// the server ended (a FATAL message) is closed before it goes back to the pool, which could otherwise lend it again
/// before it has seen it close.
final class PostgresConnections: Sendable {
    /// How long a lease waits for a connection before it fails.
    let waitLimit: Duration
    /// How long a check waits for a fresh client's first connection.
    let probeLimit: Duration
    /// The pause between two attempts to reach a database that is down.
    let probeInterval: Duration

    private let configuration: PostgresClient.Configuration
    /// The checks' configuration: a connection attempt gives up at ``probeLimit``.
    private let probeConfiguration: PostgresClient.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let state: Mutex<State>
    /// The leases' clocks (a quarter, half and the whole of the limit), on one shared clock ticking at a twentieth of
    /// ``waitLimit`` (at most 50 ms): a lease's clock is almost always stopped long before it would wake.
    private let timers: CoarseTimers

    private struct State {
        var current: Client
        /// Clients replaced but still lent: closed by their last lease's end (``Client/end()``), or by ``close()``.
        var retired: [Client] = []
        /// Since when the database is down, and why; `nil` while it is taken to answer.
        var down: (since: ContinuousClock.Instant, reason: String)?
        /// The check or the probes under way (one at a time).
        var checking: Task<Void, Never>?
        /// How many checks were set off (tests).
        var checksStarted = 0
        var closed = false
        /// Leases taken and not ended, on every client.
        var leases = 0
    }

    /// How many checks of the database were set off since the store opened.
    var checksStarted: Int { state.withLock { $0.checksStarted } }

    /// What set a check off.
    private enum Suspicion {
        /// A lease waited its whole limit for a connection (the pool is replaced if the database answers).
        case noConnection
        /// A lease has waited a quarter of the limit, a leased connection's work has taken half of it, or a connection
        /// was lost (nothing is replaced if the database answers).
        case slowOrLost
    }

    /// - Parameter waitLimit: how long a lease waits for a connection (`OFFER_SIGNER_STORE_TIMEOUT`); a check waits
    ///   half of it for a fresh connection (``probeLimit``), at most a second.
    init(configuration: PostgresClient.Configuration, eventLoopGroup: any EventLoopGroup, logger: Logger, waitLimit: Duration) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.waitLimit = waitLimit
        self.probeLimit = min(waitLimit / 2, .seconds(1))
        self.probeInterval = .milliseconds(100)
        self.timers = CoarseTimers(tick: min(waitLimit / 20, .milliseconds(50)))
        var probeConfiguration = configuration
        probeConfiguration.options.connectTimeout = probeLimit
        probeConfiguration.options.maximumConnections = 1
        self.probeConfiguration = probeConfiguration
        state = Mutex(State(current: Client(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger)))
    }

    /// The most connections a client opens.
    var maximumConnections: Int { configuration.options.maximumConnections }

    /// How long patient work (``withConnection(patient:_:)``) waits for a connection at least.
    static let patientWaitLimit: Duration = .seconds(30)

    /// Whether the database is taken to be down (leases fail at once).
    var isDown: Bool { state.withLock { $0.down != nil } }

    /// Runs `body` on a connection no one else uses until it returns.
    /// - Parameter patient: for work that waits long on purpose (a migration waiting for another process's, at start-up
    ///   when a hundred stores open at once): it sets off no check of the database, however long it waits for its
    ///   connection or holds it, and waits up to ``patientWaitLimit`` for a connection. A check on a loaded machine
    ///   (a fresh connection slower than its limit) could otherwise take the database for down and close the
    ///   connection the work holds.
    /// - Throws: ``OfferStoreError`` `unavailable` when the database is down or no connection came within
    ///   ``waitLimit`` (``patientWaitLimit``); what `body` throws.
    func withConnection<T: Sendable>(patient: Bool = false, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let client = try take()
        defer {
            client.end()
            state.withLock { $0.leases -= 1 }
        }
        let leased = LeaseFlag()
        let limit = patient ? max(waitLimit, Self.patientWaitLimit) : waitLimit
        // The clock's points from the lease's start, so that a tick's lateness at one point does not add to the next.
        let start = ContinuousClock.now
        let watching = !patient
        do {
            return try await withoutActuallyEscaping(body) { body in
                try await withThrowingTaskGroup(of: LeaseStep<T>.self) { group in
                    group.addTask {
                        while true {
                            let outcome: Leased<T> = try await client.client.withConnection { connection in
                                // postgres-nio sees a connection close one event-loop tick after its socket closed,
                                // and may lend it in between; a statement sent on it then is never answered (the
                                // driver writes it to the closed channel, which drops it). Nothing was sent on it:
                                // it is given back once the pool has seen it close, and another one is leased.
                                guard !connection.isClosed else {
                                    await Self.untilThePoolSeesItClosed(connection)
                                    return .closedBeforeUse
                                }
                                leased.set()
                                client.hold()
                                defer { client.release() }
                                let result: Result<T, any Error>
                                do {
                                    result = .success(try await body(connection))
                                    client.completed()
                                } catch {
                                    result = .failure(error)
                                }
                                if case .failure(let error as PSQLError) = result, Self.endsConnection(error) {
                                    // A FATAL message is delivered before the socket's end: closed here.
                                    try? await connection.close()
                                }
                                // A connection that closed under the work is given back only once the pool has seen
                                // it close, so that the pool does not lend it again (above).
                                await Self.untilThePoolSeesItClosed(connection)
                                return .value(try result.get())
                            }
                            if case .value(let value) = outcome { return .done(value) }
                        }
                    }
                    // The clock: a quarter of the limit without a connection, or half of it with one, sets off a
                    // check; the whole limit without a connection fails the lease.
                    group.addTask {
                        await self.timers.sleep(until: start + limit / 4)
                        return .quarter
                    }
                    while let step = try await group.next() {
                        switch step {
                        case .done(let value):
                            group.cancelAll()
                            return value
                        case .quarter:
                            if !leased.isSet, watching { self.suspect(.slowOrLost, of: client) }
                            group.addTask {
                                await self.timers.sleep(until: start + limit / 2)
                                return .halfway
                            }
                        case .halfway:
                            if leased.isSet {
                                if watching { self.suspect(.slowOrLost, of: client) }
                            } else {
                                group.addTask {
                                    await self.timers.sleep(until: start + limit)
                                    return .limit
                                }
                            }
                        case .limit:
                            guard leased.isSet else { throw LeaseTimedOut() }
                        }
                    }
                    throw CancellationError()  // never: the work's step ends the loop
                }
            }
        } catch is LeaseTimedOut {
            if !patient { suspect(.noConnection, of: client) }
            throw OfferStoreError(
                .unavailable,
                """
                PostgreSQL store: no connection to the database within \(Self.describe(limit)); check that it runs, that this host can reach \
                it, and the host and port in the URL.
                """
            )
        } catch  where !leased.isSet {
            // The lease failed: the pool was closed as the database was found down (or the store closed).
            throw state.withLock { state in
                state.down.map { Self.downError($0, probeInterval: probeInterval) }
                    ?? OfferStoreError(.unavailable, "PostgreSQL store: no connection to the database.")
            }
        } catch let error as PSQLError where Self.isLostConnection(error) {
            suspect(.slowOrLost, of: client)
            throw error
        }
    }

    /// Runs a prepared statement on a connection of its own (``withConnection(_:)``) and returns its rows.
    ///
    /// The statement is checked and handed to the connection on the connection's event loop, as
    /// ``OpenConnectionDatabase`` does for SQLKit's: postgres-nio writes it to its channel without a promise, so a
    /// statement sent just after the connection closed (between the lease and the send: a database that stops) would
    /// reach no one and never be answered — the decision log's writer waited so, and the store's `close()` with it.
    func execute<Statement: PostgresPreparedStatement>(_ statement: Statement) async throws -> [Statement.Row] where Statement.Row: Sendable {
        try await withConnection { [logger] connection in try await connection.rowsIfOpen(statement, logger: logger) }
    }

    /// Closes every client; leases fail from now on. Returns once the leases under way have ended (their statements
    /// fail as their connections close), or after ``drainLimit``: the event loops their statements run on may be shut
    /// down after this returns, and a statement submitted to a loop that was shut down would never be answered.
    func close() async {
        let (clients, checking) = state.withLock { state -> ([Client], Task<Void, Never>?) in
            state.closed = true
            let checking = state.checking
            state.checking = nil
            return ([state.current] + state.retired, checking)
        }
        checking?.cancel()
        await checking?.value
        for client in clients { await client.close() }
        await drain()
    }

    /// How long ``close()`` waits for the leases under way to end.
    static let drainLimit: Duration = .seconds(5)

    /// Waits until no lease is under way, at most ``drainLimit`` (looked at every 10 ms: a store closes once).
    private func drain() async {
        let start = ContinuousClock.now
        while state.withLock({ $0.leases }) > 0, ContinuousClock.now - start < Self.drainLimit, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    // MARK: the outage

    /// The current client, counted as lent; fails at once when the database is down or the store closed.
    private func take() throws(OfferStoreError) -> Client {
        let taken = state.withLock { state -> Result<Client, OfferStoreError> in
            if state.closed { return .failure(OfferStoreError(.unavailable, "PostgreSQL store: the store is closed.")) }
            if let down = state.down { return .failure(Self.downError(down, probeInterval: probeInterval)) }
            state.current.begin()
            state.leases += 1
            return .success(state.current)
        }
        return try taken.get()
    }

    /// Starts a check of the database unless one is under way, the store is closed, or `client` is no longer the one
    /// serving (the check that replaced it has done its work).
    private func suspect(_ suspicion: Suspicion, of client: Client) {
        state.withLock { state in
            guard !state.closed, state.checking == nil, state.down == nil, state.current === client else { return }
            // Detached: the check is the store's, not the request's that happened to set it off (its log lines carry no
            // request ID).
            state.checksStarted += 1
            state.checking = Task.detached { await self.check(suspicion, of: client) }
        }
    }

    /// Opens one connection with a fresh client: the database is down if it cannot (then probes until it can), and
    /// a pool stuck in its backoff is replaced if it can.
    private func check(_ suspicion: Suspicion, of client: Client) async {
        let completedBefore = client.completions
        let started = ContinuousClock.now
        var failure = await portRefusal()
        if failure == nil {
            let fresh = Client(configuration: probeConfiguration, eventLoopGroup: eventLoopGroup, logger: Self.quiet)
            failure = await fresh.answers(within: probeLimit)
            fresh.stop()
        }
        // Work that completed on the serving pool meanwhile says the database answers, whatever the fresh connection
        // met (a server at its connection limit refuses new ones and serves the open ones).
        if let failure, client.completions == completedBefore {
            await probe(since: started, reason: failure)
            return
        }
        // The database answers. A pool that had a free connection to give and gave none is stuck: replace it.
        if failure == nil, suspicion == .noConnection, client.holding < maximumConnections {
            logger.notice("the PostgreSQL pool gave no connection although the database answers; a new pool serves from now on")
            serve(Client(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger))
        } else {
            state.withLock { $0.checking = nil }
        }
    }

    /// The database is down: leases fail at once, the serving pool's connections are closed, and a fresh client
    /// tries every ``probeInterval`` until one connects, which then serves.
    private func probe(since: ContinuousClock.Instant, reason: String) async {
        let dropped = state.withLock { state -> [Client] in
            guard !state.closed else { return [] }
            state.down = (since, reason)
            // Every client is closed; the one serving is kept as `current` (each lease fails before reaching it) until
            // a fresh one replaces it.
            let dropped = [state.current] + state.retired
            state.retired = []
            return dropped
        }
        guard !dropped.isEmpty else { return }
        logger.error(
            "the database does not answer; requests that need the store are answered 503 store_unavailable until it does",
            metadata: [
                "reason": "\(reason)", "retryEvery": "\(Self.describe(probeInterval))",
            ]
        )
        for client in dropped { client.stop() }
        while !Task.isCancelled {
            if await portRefusal() != nil {
                try? await Task.sleep(for: probeInterval)
                continue
            }
            let fresh = Client(configuration: probeConfiguration, eventLoopGroup: eventLoopGroup, logger: Self.quiet)
            if await fresh.answers(within: probeLimit) == nil {
                let seconds = Double((ContinuousClock.now - since).components.seconds)
                logger.notice("the database answers again; the store serves", metadata: ["downSeconds": "\(Int(seconds))"])
                serve(Client(configuration: configuration, eventLoopGroup: eventLoopGroup, logger: logger))
                fresh.stop()
                return
            }
            await fresh.close()
            try? await Task.sleep(for: probeInterval)
        }
    }

    /// Makes `fresh` the client that serves; the one it replaces closes once its last lease ends.
    private func serve(_ fresh: Client) {
        let replaced = state.withLock { state -> Client? in
            state.checking = nil
            guard !state.closed else { return nil }
            let replaced = state.current
            state.current = fresh
            state.down = nil
            state.retired.append(replaced)
            return replaced
        }
        guard let replaced else {
            Task { await fresh.close() }
            return
        }
        replaced.retire { [weak self] in
            self?.state.withLock { state in state.retired.removeAll { $0 === replaced } }
        }
    }

    /// Why the server's port does not take a TCP connection within ``probeLimit`` (refused: nothing listens), or `nil`
    /// when it does (whether the database behind it answers is the fresh client's to find).
    private func portRefusal() async -> String? {
        guard let host = configuration.host, let port = configuration.port else { return nil }
        let nanoseconds = probeLimit.components.seconds * 1_000_000_000 + probeLimit.components.attoseconds / 1_000_000_000
        do {
            let channel = try await ClientBootstrap(group: eventLoopGroup)
                .connectTimeout(.nanoseconds(nanoseconds))
                .connect(host: host, port: port).get()
            try? await channel.close()
            return nil
        } catch {
            return "the database's port did not accept a connection"
        }
    }

    /// What a call is told while the database is down.
    private static func downError(_ down: (since: ContinuousClock.Instant, reason: String), probeInterval: Duration) -> OfferStoreError {
        let seconds = (ContinuousClock.now - down.since).components.seconds
        return OfferStoreError(
            .unavailable,
            """
            PostgreSQL store: the database has not answered for \(seconds) s (\(down.reason)), tried again every \(describe(probeInterval)); \
            check that it runs, that this host can reach it, and the host and port in the URL.
            """
        )
    }

    /// Returns at once if `connection` is open; else once its close is complete, which the pool the connection
    /// belongs to has then seen (its callback on the close runs before this one's).
    private static func untilThePoolSeesItClosed(_ connection: PostgresConnection) async {
        guard connection.isClosed else { return }
        try? await connection.closeFuture.get()
    }

    /// An error of the connection rather than of the statement (the server went away, or could not be reached).
    private static func isLostConnection(_ error: PSQLError) -> Bool {
        [.serverClosedConnection, .connectionError, .uncleanShutdown].contains(error.code)
    }

    /// An error after which the connection is of no use: lost, or ended by the server (a FATAL or PANIC message,
    /// e.g. `pg_terminate_backend`, a shutdown).
    static func endsConnection(_ error: PSQLError) -> Bool {
        isLostConnection(error) || ["FATAL", "PANIC"].contains(error.serverInfo?[.severity] ?? "")
    }

    /// `2s`, `1500ms`.
    static func describe(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
    }
}

/// One postgres-nio client and the task that runs it, with its leases counted so that a replaced client is closed
/// once the last ends.
private final class Client: Sendable {
    let client: PostgresClient
    private let running: Task<Void, Never>
    private let counts = Mutex(Counts())

    private struct Counts {
        /// Leases taken and not ended (waiting for a connection or holding one).
        var lent = 0
        /// Leases holding a connection.
        var holding = 0
        /// Leases whose work returned.
        var completions = 0
        /// Set when replaced: called, and the client closed, when `lent` reaches 0.
        var onRetired: (@Sendable () -> Void)?
        var retired = false
    }

    init(configuration: PostgresClient.Configuration, eventLoopGroup: any EventLoopGroup, logger: Logger) {
        let client = PostgresClient(configuration: configuration, eventLoopGroup: eventLoopGroup, backgroundLogger: logger)
        self.client = client
        running = Task { await client.run() }
    }

    /// Leases holding a connection (not waiting for one).
    var holding: Int { counts.withLock { $0.holding } }

    /// A lease is taken (``end()`` when it ends).
    func begin() { counts.withLock { $0.lent += 1 } }

    /// A lease holds its connection (``release()`` when it gives it back).
    func hold() { counts.withLock { $0.holding += 1 } }

    func release() { counts.withLock { $0.holding -= 1 } }

    /// A lease's work returned: the database answered.
    func completed() { counts.withLock { $0.completions &+= 1 } }

    /// How many leases' work returned.
    var completions: Int { counts.withLock { $0.completions } }

    func end() {
        let retired = counts.withLock { counts -> (@Sendable () -> Void)? in
            counts.lent -= 1
            guard counts.retired, counts.lent == 0 else { return nil }
            defer { counts.onRetired = nil }
            return counts.onRetired ?? {}
        }
        if let retired {
            running.cancel()
            retired()
        }
    }

    /// Closes the client once no lease is left (at once if none is), then calls `done`.
    func retire(_ done: @escaping @Sendable () -> Void) {
        let now = counts.withLock { counts -> Bool in
            counts.retired = true
            if counts.lent == 0 { return true }
            counts.onRetired = done
            return false
        }
        if now {
            running.cancel()
            done()
        }
    }

    /// Whether a connection opens and answers `SELECT 1` within `limit`: `nil` if it does, else why not.
    func answers(within limit: Duration) async -> String? {
        do {
            let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { [client] in
                    try await client.withConnection { connection in
                        for try await _ in try await connection.queryIfOpen("SELECT 1", logger: PostgresConnections.quiet) {}
                    }
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return false
                }
                let first = try await group.next() ?? false
                // A connection that went silent holds its statement until the client closes it.
                if !first { stop() }
                group.cancelAll()
                return first
            }
            return answered ? nil : "no connection within \(PostgresConnections.describe(limit))"
        } catch let error as PSQLError {
            return error.serverInfo?[.message] ?? "the database could not be reached"
        } catch {
            return "the database could not be reached"
        }
    }

    /// Stops the client (its connections close, waiting leases fail) and waits until it has.
    func close() async {
        running.cancel()
        await running.value
    }

    /// Stops the client without waiting (a connection attempt under way ends at its connect timeout).
    func stop() {
        running.cancel()
    }
}

extension PostgresConnections {
    /// The checks' logger: a failed connection attempt is what they look for, not news.
    static let quiet = Logger(label: "offer-signer.store.check", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A step of ``PostgresConnections/withConnection(_:)``: the work's result, or a point on the clock.
private enum LeaseStep<T: Sendable>: Sendable {
    case done(T)
    case quarter
    case halfway
    case limit
}

/// What a lease's work got from postgres-nio: the work's value, or a connection that was closed before it was lent
/// (leased again).
private enum Leased<T: Sendable>: Sendable {
    case value(T)
    case closedBeforeUse
}

/// Whether a lease's connection was given (set from the work's task, read by the clock's).
private final class LeaseFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// A lease waited its whole limit.
private struct LeaseTimedOut: Error {}

extension PostgresConnection {
    /// Sends `statement` unless the connection has closed, checking and sending in one job of the connection's event
    /// loop (as ``OpenConnectionDatabase`` does for SQLKit's statements). postgres-nio writes a statement to its
    /// channel without a promise and learns of a close one tick after the socket's: a statement sent from elsewhere in
    /// between reaches no one and is never answered (the timed suites' hang, `ClosedConnectionLeaseTests`). A closed
    /// connection: `unavailable`. The rows are read after, wherever the caller runs.
    func executeIfOpen<Statement: PostgresPreparedStatement>(
        _ statement: Statement,
        logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Statement.Row> {
        try await ifOpen { try await $0.execute(statement, logger: logger) }
    }

    /// ``executeIfOpen(_:logger:)``, its rows read to the end.
    func rowsIfOpen<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await executeIfOpen(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// ``executeIfOpen(_:logger:)`` for a query of text and bindings.
    func queryIfOpen(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await ifOpen { try await $0.query(query, logger: logger) }
    }

    /// `send` on the connection's event loop, in the job that finds it open; `unavailable` when it has closed.
    private func ifOpen<T>(_ send: (PostgresConnection) async throws -> T) async throws -> T {
        try await withTaskExecutorPreference(EventLoopTaskExecutor(eventLoop)) {
            guard !isClosed else { throw OfferStoreError.connectionClosed }
            return try await send(self)
        }
    }
}

extension OfferStoreError {
    /// A statement refused on a PostgreSQL connection that has closed (``PostgresConnection/executeIfOpen(_:logger:)``,
    /// ``OpenConnectionDatabase``).
    static var connectionClosed: OfferStoreError {
        OfferStoreError(.unavailable, "PostgreSQL store: the connection to the database was closed.")
    }
}
