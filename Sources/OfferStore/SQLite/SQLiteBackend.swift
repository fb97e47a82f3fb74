import Dispatch
import Logging
import NIOPosix
import OfferModel
import SQLKit
import SQLiteKit
import SQLiteNIO
import Synchronization

/// The embedded database: one SQLite file, nothing to install (the default).
///
/// The file is in WAL mode: a transaction is on disk (the WAL fsynced) before its writer returns — the group
/// commit's batches at COMMIT (`synchronous=FULL`), other writes by a flush just after their COMMIT, with the write
/// lock already released (``SQLiteWALFlush``) — so a killed process, or a power cut, loses nothing that was
/// acknowledged. Writes go one transaction
/// at a time (an ``AsyncGate``), each opened with `BEGIN IMMEDIATE`: the group commit's batches of a file on the
/// ``SQLiteLogWriter``'s own connection (statements prepared once), everything else on sqlite-nio's writer
/// connection; reads of a file use connections of their own (``SQLiteReaders``), which WAL lets read side by side
/// and while a write is in progress, and the background lane's reads (reports, dry-runs) one more, whose statements
/// run on the lane's low-priority thread (``BackgroundLane``).
final class SQLiteBackend: SQLStoreBackend {
    private let writer: SQLiteConnection
    /// A file's read connections (`nil` in memory: reads share the writer's connection and its gate).
    private let readers: SQLiteReaders?
    /// A file's read connection for the background lane (``BackgroundLane``): its statements run on the lane's
    /// low-priority thread, one at a time, so a report or a replay never holds a reader or a thread that signing
    /// reads with (`nil` in memory).
    private let backgroundReader: SQLiteConnection?
    private let backgroundGate = AsyncGate()
    private let writeGate = AsyncGate()
    /// The group commit's writer of a file (`nil` in memory: a second connection would open another database).
    private let logWriter: SQLiteLogWriter?
    /// A file's reads of one customer for a decision under their lock, through statements prepared once (`nil` in
    /// memory).
    let customerReaders: SQLiteCustomerReaders?
    /// A file's writer connection for batches of many statements, each prepared once (``preparedWrite(_:)``; `nil` in
    /// memory).
    private let preparedWriter: SQLitePreparedWriter?
    /// The flush of a file's WAL after a write (`nil` in memory: nothing is durable).
    private let walFlush: SQLiteWALFlush?
    /// A server's hold on its file (``SQLiteFileLock``); `nil` for the tools, which share it, and in memory.
    private let fileLock: SQLiteFileLock?
    /// How long a write waits for another process's lock (`busy_timeout`), and for its turn at the write gate.
    private let busyTimeout: Duration

    let name = "SQLite"
    let beginTransaction = "BEGIN IMMEDIATE"
    let writesInCommonTableExpressions = false
    let batchInTransaction = true
    /// ``write(_:)`` flushes a file's WAL once the write gate is released.
    let commitBeforeFlush: (begin: String, flush: String)? = nil
    /// sqlite-nio builds SQLite with `SQLITE_MAX_VARIABLE_NUMBER=250000` (32,766 is SQLite's own default):
    /// 500 rows of 10 parameters fit either way (the in-memory store's batches; a file's are prepared one-row
    /// INSERTs).
    let recordsPerBatch = 500
    /// Whether this process is the only one writing the database: a server's file (``SQLiteFileLock``), or one in
    /// memory. A customer's decisions then need no write transaction to be serialized (``CustomerLocks``).
    var decidesAlone: Bool { fileLock != nil || logWriter == nil }

    /// Opens (or creates) the database.
    /// - Parameter path: the file; `nil` for an in-memory database (tests, `serve --demo`).
    /// - Parameters:
    ///   - busyTimeout: how long a statement waits for another process's lock on the file before it fails
    ///     `unavailable` (`OFFER_SIGNER_STORE_TIMEOUT`).
    ///   - exclusive: take the file for this process (``SQLiteFileLock``, a server): fails with `storeInUse` when
    ///     another holds it.
    init(path: String?, logger: Logger, busyTimeout: Duration = defaultStoreTimeout, exclusive: Bool = false) async throws {
        fileLock = try path.flatMap { path in exclusive ? try SQLiteFileLock(databasePath: path) : nil }
        self.busyTimeout = busyTimeout
        let busy = "PRAGMA busy_timeout=\(SQLiteLogWriter.milliseconds(busyTimeout))"
        // Every connection opened so far, closed again when a later step fails (a file that is not a database
        // fails at the first query): a connection must be closed before it is released.
        var opened: [SQLiteConnection] = []
        do {
            if let path {
                writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
                opened.append(writer)
                _ = try await writer.query("PRAGMA journal_mode=WAL")
                // Commits write the WAL without flushing it; ``write(_:)`` waits for a flush after the write gate is
                // released (``SQLiteWALFlush``), so a writer's lock is not held through the disk's flush.
                _ = try await writer.query("PRAGMA synchronous=NORMAL")
                _ = try await writer.query(busy)
                // A statement inside `BEGIN IMMEDIATE` that may fail alone (an INSERT a unique index refuses)
                // keeps a statement journal (the pages it changes, to undo that statement); past 64 KiB SQLite
                // spills it to a temporary file — several writes a batch, ~10 µs a signature measured when batches
                // were one multi-row INSERT. In memory it is a copy. It only ever undoes a statement: durability
                // is the WAL's. (The log writer's connection sets the same.)
                _ = try await writer.query("PRAGMA temp_store=MEMORY")
                var connections: [SQLiteConnection] = []
                for _ in 0..<SQLiteReaders.count {
                    let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
                    opened.append(reader)
                    _ = try await reader.query(busy)
                    connections.append(reader)
                }
                readers = SQLiteReaders(connections)
                let background = try await SQLiteConnection.open(
                    storage: .file(path: path),
                    threadPool: BackgroundLane.shared.threadPool,
                    logger: logger,
                    on: MultiThreadedEventLoopGroup.singleton.any()
                )
                opened.append(background)
                _ = try await background.query(busy)
                backgroundReader = background
                logWriter = SQLiteLogWriter(path: path, busyTimeout: busyTimeout)
                customerReaders = SQLiteCustomerReaders(path: path, busyTimeout: busyTimeout)
                preparedWriter = SQLitePreparedWriter(path: path, busyTimeout: busyTimeout)
                walFlush = SQLiteWALFlush(path: path)
            } else {
                writer = try await SQLiteConnection.open(storage: .memory, logger: logger)
                readers = nil
                backgroundReader = nil
                logWriter = nil
                customerReaders = nil
                preparedWriter = nil
                walFlush = nil
            }
        } catch {
            for connection in opened { try? await connection.close() }
            throw OfferStoreError(
                .unavailable,
                "Cannot open the SQLite store\(path.map { " at \($0)" } ?? ""): \(Self.describe(error))."
            )
        }
    }

    deinit {
        // A store dropped without close() (a test that never ran the service) still closes its connections:
        // the future-based close keeps each connection alive until it is done.
        for reader in readers?.connections ?? [] where !reader.isClosed { _ = reader.close() }
        if let backgroundReader, !backgroundReader.isClosed { _ = backgroundReader.close() }
        if !writer.isClosed { _ = writer.close() }
    }

    private static func describe(_ error: any Error) -> String {
        (error as? SQLiteError)?.message ?? "\(type(of: error))"
    }

    func describe(_ error: any Error) -> String { Self.describe(error) }

    func isUniqueViolation(_ error: any Error) -> Bool {
        guard let reason = (error as? SQLiteError)?.reason else { return false }
        return [.constraint, .constraintUniqueFailed, .constraintPrimaryKeyFailed].contains(reason)
    }

    /// Reads on a connection of the file's own: the background one inside ``BackgroundLane/run(_:)``, a reader
    /// of ``SQLiteReaders`` otherwise (in memory: the writer's).
    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        if BackgroundLane.isActive, let backgroundReader {
            return try await backgroundGate.withGate { try await body(backgroundReader.sql(queryLogLevel: nil)) }
        }
        guard let readers else {
            let writer = self.writer
            return try await writeGate.withGate { try await body(writer.sql(queryLogLevel: nil)) }
        }
        return try await readers.withReader { reader in try await body(reader.sql(queryLogLevel: nil)) }
    }

    /// Runs `body` inside the write gate, then — for a file — waits, with the gate released, until what it committed
    /// is on disk (the writer connection commits without flushing: ``SQLiteWALFlush``).
    /// Background work (``BackgroundLane``) writes off the lane: the write gate is signing's too.
    func write<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let writer = self.writer
        return try await writing { try await body(writer.sql(queryLogLevel: nil)) }
    }

    /// ``write(_:)`` on a file's ``SQLitePreparedWriter`` (in memory: ``write(_:)``): the same gate, the same flush
    /// after it.
    func preparedWrite<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard let preparedWriter else { return try await write(body) }
        let logger = writer.logger
        return try await writing { try await body(SQLitePreparedDatabase(writer: preparedWriter, logger: logger)) }
    }

    private func writing<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await BackgroundLane.leaving { () async throws -> T in
            let value: T
            do {
                // A file's writes wait for each other at most the store's bound, as for another process's lock:
                // behind a write blocked on a locked file, a queue of writes fails in turn instead of growing.
                value = try await writeGate.withGate(within: walFlush == nil ? nil : busyTimeout) { try await body() }
            } catch is AsyncGateTimedOut {
                throw OfferStoreError(
                    .unavailable,
                    """
                    SQLite store: the file's writes did not get their turn within \(SQLiteLogWriter.milliseconds(busyTimeout)) ms (is another \
                    process holding it locked?).
                    """
                )
            }
            try await walFlush?.flush()
            return value
        }
    }

    /// A file's batches go through ``SQLiteLogWriter``, on its queue, inside the write gate (waited for blocking
    /// that queue): the two writer connections never write at once, so neither waits on the other's lock.
    var issuedSignatureWriter: IssuedSignatureWriter? {
        guard let logWriter else { return nil }
        let gate = writeGate
        return IssuedSignatureWriter(queue: logWriter.queue) { records in
            try gate.withGateBlocking { try logWriter.writeOnQueue(records) }
        } claim: { claims in
            try gate.withGateBlocking { try logWriter.claimOnQueue(claims) }
        }
    }

    /// Writes a batch of the decision log through ``SQLiteLogWriter`` (statements prepared once), on its queue,
    /// inside the write gate, as the group commit's batches; `false` in memory (nothing written: the caller writes
    /// through SQLKit).
    func writeDecisions(_ records: [PolicyDecisionRecord]) async throws -> Bool {
        guard let logWriter else { return false }
        let gate = writeGate
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            logWriter.queue.async {
                continuation.resume(with: Result { try gate.withGateBlocking { try logWriter.writeDecisionsOnQueue(records) } })
            }
        }
        return true
    }

    /// `BEGIN IMMEDIATE` already holds the file's write lock, which keeps other processes' migrators out.
    func lockMigrations(on database: any SQLDatabase) async throws {}

    func lockSubscriptionOutcomes(_ originalTransactionId: String, environment: String, on database: any SQLDatabase) async throws {}

    func close() async throws {
        try await backgroundGate.withGate { [backgroundReader] in try await backgroundReader?.close() }
        await customerReaders?.close()
        try await writeGate.withGate { [writer, readers, logWriter, preparedWriter] in
            await logWriter?.close()
            preparedWriter?.close()
            for reader in readers?.connections ?? [] { try await reader.close() }
            try await writer.close()
        }
        fileLock?.release()
    }
}

/// A SQLite file's read connections, each lent to one reader at a time, first come first served (an ``AsyncGate``
/// with a permit per connection). With one connection every read of the service queued behind the one before it —
/// each a trip to sqlite-nio's thread pool and back — however little it read; WAL lets several connections read at
/// once, and beside the writer.
final class SQLiteReaders: Sendable {
    /// How many read connections a file gets.
    static let count = 4

    let connections: [SQLiteConnection]
    private let gate: AsyncGate
    /// The connections not lent: never empty for a holder of the gate.
    private let free: Mutex<[Int]>

    init(_ connections: [SQLiteConnection]) {
        self.connections = connections
        gate = AsyncGate(permits: connections.count)
        free = Mutex(Array(connections.indices))
    }

    /// Runs `body` with a connection no other reader uses until it returns.
    func withReader<T: Sendable>(_ body: @Sendable (SQLiteConnection) async throws -> T) async throws -> T {
        try await gate.withGate {
            let index = free.withLock { $0.removeLast() }
            defer { free.withLock { $0.append(index) } }
            return try await body(connections[index])
        }
    }
}
