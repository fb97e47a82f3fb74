import Dispatch
import Logging
import OfferModel
import SQLKit

/// What differs between the two databases under ``SQLOfferStore``: how a connection is had, how a write
/// transaction begins, how migrators are kept apart. Every statement is written once, in ``SQLOfferStore`` and
/// ``StoreSchema``; SQLKit's dialects render it for SQLite or PostgreSQL.
protocol SQLStoreBackend: Sendable {
    /// `SQLite` or `PostgreSQL`, for messages.
    var name: String { get }

    /// The statement that opens a write transaction (`BEGIN IMMEDIATE` takes SQLite's write lock at once).
    var beginTransaction: String { get }

    /// Whether a group-commit batch written with ``IssuedSignatureInsert`` (one multi-row INSERT) is wrapped in
    /// `BEGIN … COMMIT`. SQLite: yes, so
    /// that the batch fails rather than silently joining a transaction left open on the writer. PostgreSQL: no,
    /// the single statement is its own transaction (one round trip instead of three).
    var batchInTransaction: Bool { get }

    /// For a transaction under a customer's lock: the statement run after `BEGIN` that lets its `COMMIT` return
    /// before the disk flush — releasing the locks sooner — and the statement run after `COMMIT` that returns once
    /// the commit is flushed (the caller is answered only then). `nil`: `COMMIT` itself is durable, or ``write(_:)``
    /// flushes after releasing its lock (a SQLite file).
    var commitBeforeFlush: (begin: String, flush: String)? { get }

    /// Whether a statement may write in a `WITH` clause (PostgreSQL; SQLite's `WITH` only reads): a customer
    /// transaction then records its signature and stores its answer in one statement.
    var writesInCommonTableExpressions: Bool { get }

    /// The largest group-commit batch (a multi-row INSERT has 10 parameters a row).
    var recordsPerBatch: Int { get }

    /// Runs `body` on a connection for reads.
    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T

    /// Runs `body` on a connection that no other transaction uses until `body` returns.
    func write<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T

    /// ``write(_:)`` for a batch of many statements written with SQLKit's builders (App Store notifications): a
    /// SQLite file runs them through statements prepared once, on the caller's thread (``SQLitePreparedWriter``).
    /// The default: ``write(_:)``.
    func preparedWrite<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T

    /// ``write(_:)`` for work that may wait long on purpose (a migration waiting for another process's): however
    /// long it waits for its connection or holds it, that is not taken for a database gone silent (PostgreSQL:
    /// ``PostgresConnections/withConnection(patient:_:)``). The default: ``write(_:)``.
    func patiently<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T

    /// The backend's own writer of group-commit batches, when it has one (a SQLite file: ``SQLiteLogWriter``);
    /// `nil`: the store writes each batch with ``IssuedSignatureInsert`` from a task.
    var issuedSignatureWriter: IssuedSignatureWriter? { get }

    /// The retention path's statements prepared once per connection (PostgreSQL: ``PostgresAnswers``); `nil` (the
    /// default): the store's own through SQLKit.
    var preparedAnswerStatements: PreparedAnswerStatements? { get }
    /// Token buckets shared by every process on the database (PostgreSQL); `nil` where one process serves the store.
    var sharedLimits: (any SharedLimitStore)? { get }

    /// Statements of a migration that only this database runs, after the shared ones (``StoreSchema``); none by
    /// default.
    func migrationStatements(version: Int) -> [SQLQueryString]

    /// Opens what the backend keeps open and prepares its hot statements there, ahead of the first requests
    /// (``OfferStore/warmUp()``); failures are logged, not thrown.
    func warmUp() async

    /// Records a batch of retention answers in one statement, its own transaction, when the database can
    /// (PostgreSQL: ``PostgresAnswers/recordRetentionAnswers``); `nil` (the default): ``SQLOfferStore`` writes the
    /// batch in a transaction of its own statements.
    var retentionAnswersWriter: (@Sendable ([RetentionAnswerRecord]) async throws -> Void)? { get }

    /// Writes a batch of the decision log (its decisions, each with its facts snapshot) in one statement, its own
    /// transaction, when the database can (PostgreSQL: ``PostgresDecisionBatch``); `nil` (the default):
    /// ``SQLOfferStore/writeDecisions(_:backend:)`` writes it in a transaction of its own statements.
    var decisionBatchWriter: (@Sendable ([PolicyDecisionRecord]) async throws -> Void)? { get }

    /// Files a batch of notifications that ``PostgresNotificationBatch/fits(_:)`` inside the caller's transaction in
    /// two statements (PostgreSQL: ``PostgresNotificationBatch``), or throws and the batch is filed one notification at
    /// a time; `nil` (the default): ``SQLOfferStore/fileNotifications(_:backend:)`` files each with its own statements.
    var notificationBatchFiler: (@Sendable ([PendingFiling], any SQLDatabase) async throws -> [NotificationFiled])? { get }

    /// The backend's own insert of group-commit batches, from a task, for one run of the writer
    /// (``GroupCommitQueue/Run``): calls `batches` exactly once with the insert of each batch of that run
    /// (PostgreSQL: one prepared statement, its own transaction, durable when it returns, counting into
    /// `issued_daily`, on one connection leased for the whole run), which returns the records inserted, each once
    /// — any other was recorded before. `nil` (the default): the store's ``IssuedSignatureInsert``.
    var issuedSignatureBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.BatchInsert) async -> Void) async -> Void)? {
        get
    }

    /// The backend's insert of group-commit batches of decided records (``CheckedRecord``), each checked against
    /// what its decision read, for one run of the writer, as ``issuedSignatureBatchRun``'s: returns the records
    /// inserted; one not returned was refused by its check (PostgreSQL: ``PostgresCustomerDecisions``). `nil` (the
    /// default): the store's customers are decided for by this process alone, and no record needs a check.
    var checkedBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.CheckedBatchInsert) async -> Void) async -> Void)? {
        get
    }

    /// A customer's facts and their issued signatures since a time (newest first), in one prepared statement
    /// (PostgreSQL); `nil` (the default): ``SQLOfferStore/customerSnapshot(_:issuedSince:)``'s own reads.
    var customerSnapshotRead: (@Sendable (_ key: CustomerKey, _ since: Int64) async throws -> (facts: String?, issued: [IssuedSignature]))? {
        get
    }

    /// Takes, until the transaction ends, the lock on a customer's issued signatures that ``checkedBatchRun``'s
    /// batches take (PostgreSQL: an advisory lock); a no-op where one process decides for the store.
    func lockIssued(_ key: CustomerKey, on database: any SQLDatabase) async throws

    /// Where the task that writes the group-commit batches runs (PostgreSQL: the event loop of its connections);
    /// `nil` (the default): the shared cooperative pool.
    var batchExecutor: (any TaskExecutor)? { get }

    /// Keeps migrators of several processes apart, inside a migration's transaction.
    func lockMigrations(on database: any SQLDatabase) async throws

    /// Holds, until the transaction ends, a lock on one subscription's outcome rows (an original transaction in an
    /// environment), so that a redemption and the events that follow it, recorded at once on two connections, each
    /// see the other. A no-op where transactions already run one at a time (SQLite's `BEGIN IMMEDIATE`).
    func lockSubscriptionOutcomes(_ originalTransactionId: String, environment: String, on database: any SQLDatabase) async throws

    /// A driver error, in words (never a password).
    func describe(_ error: any Error) -> String

    /// Whether a driver error is a statement refused by a unique index (the statement wrote nothing; the
    /// connection and its transaction, if any, go on).
    func isUniqueViolation(_ error: any Error) -> Bool

    /// Closes the connections.
    func close() async throws
}

/// An error thrown by a caller's closure inside a transaction: rolled back, then rethrown unchanged
/// (``SQLStoreBackend/storeError(_:)`` leaves it alone; ``SQLOfferStore`` unwraps it).
struct CallerError: Error {
    let error: any Error
}

extension SQLStoreBackend {
    var issuedSignatureBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.BatchInsert) async -> Void) async -> Void)? {
        nil
    }
    var checkedBatchRun: (@Sendable (_ batches: @Sendable (_ insert: @escaping SQLOfferStore.CheckedBatchInsert) async -> Void) async -> Void)? {
        nil
    }
    var customerSnapshotRead: (@Sendable (_ key: CustomerKey, _ since: Int64) async throws -> (facts: String?, issued: [IssuedSignature]))? {
        nil
    }
    func lockIssued(_ key: CustomerKey, on database: any SQLDatabase) async throws {}
    var preparedAnswerStatements: PreparedAnswerStatements? { nil }
    var sharedLimits: (any SharedLimitStore)? { nil }
    var batchExecutor: (any TaskExecutor)? { nil }
    var retentionAnswersWriter: (@Sendable ([RetentionAnswerRecord]) async throws -> Void)? { nil }
    var decisionBatchWriter: (@Sendable ([PolicyDecisionRecord]) async throws -> Void)? { nil }
    var notificationBatchFiler: (@Sendable ([PendingFiling], any SQLDatabase) async throws -> [NotificationFiled])? { nil }
    func migrationStatements(version: Int) -> [SQLQueryString] { [] }
    func warmUp() async {}
    func patiently<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T { try await write(body) }
    func preparedWrite<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T { try await write(body) }

    /// Runs `body` in one transaction on a connection of its own: committed if `body` returns, rolled back if it
    /// throws. Driver errors become ``OfferStoreError`` `unavailable`.
    ///
    /// `flushAfterCommit`: the locks are released at `COMMIT`, before the disk flush, which this then waits for
    /// (``commitBeforeFlush``): for transactions that many callers queue for (one customer's lock). The WAL is
    /// flushed in commit order, so whatever such a transaction read is durable before it is.
    ///
    /// Background work (``BackgroundLane``) runs its transactions off the lane: their locks are signing's too.
    ///
    /// `patient`: the transaction may wait long on purpose (``patiently(_:)``: a migration). `prepared`: a batch of
    /// many statements (``preparedWrite(_:)``).
    func transaction<T: Sendable>(
        flushAfterCommit: Bool = false,
        patient: Bool = false,
        prepared: Bool = false,
        _ body: @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        try await BackgroundLane.leaving { () async throws -> T in
            try await transactionHere(flushAfterCommit: flushAfterCommit, patient: patient, prepared: prepared, body)
        }
    }

    private func transactionHere<T: Sendable>(
        flushAfterCommit: Bool,
        patient: Bool,
        prepared: Bool,
        _ body: @Sendable (any SQLDatabase) async throws -> T
    ) async throws -> T {
        let early = flushAfterCommit ? commitBeforeFlush : nil
        @Sendable func run(_ database: any SQLDatabase) async throws -> T {
            try await database.execute(sql: SQLRaw(beginTransaction)) { _ in }
            let value: T
            do {
                if let early { try await database.execute(sql: SQLRaw(early.begin)) { _ in } }
                value = try await body(database)
                try await database.execute(sql: SQLRaw("COMMIT")) { _ in }
            } catch {
                try? await database.execute(sql: SQLRaw("ROLLBACK")) { _ in }
                throw error
            }
            if let early { try await database.execute(sql: SQLRaw(early.flush)) { _ in } }
            return value
        }
        return try await mappingErrors {
            if patient { return try await patiently(run) }
            return prepared ? try await preparedWrite(run) : try await write(run)
        }
    }

    /// Runs `body` on a read connection; driver errors become ``OfferStoreError`` `unavailable`.
    func reading<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await mappingErrors { try await read(body) }
    }

    /// Runs `body`, turning what the driver throws into ``OfferStoreError`` `unavailable`; store errors and
    /// ``CallerError`` pass unchanged.
    func mappingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as OfferStoreError {
            throw error
        } catch let error as CallerError {
            throw error
        } catch {
            throw OfferStoreError(.unavailable, "\(name) store: \(describe(error)).")
        }
    }
}

extension SQLDatabase {
    /// Runs one statement written as text (the schema, PRAGMAs, locks), ignoring any rows.
    func run(_ statement: SQLQueryString) async throws {
        try await execute(sql: statement) { _ in }
    }
}

/// A backend's writer of group-commit batches of issued signatures: `write` runs on `queue` (serial), blocking its
/// thread, and writes a batch in one transaction, durably — one outcome per record (`nil`: written, or
/// `duplicateNonce`); throwing fails the whole batch.
struct IssuedSignatureWriter: Sendable {
    var queue: DispatchQueue
    var write: @Sendable ([IssuedSignature]) throws -> [(any Error)?]
    /// Writes a batch of ``AnswerClaim``s the same way: one outcome per claim (`nil`, ``AnswerAlreadyStored`` or
    /// `duplicateNonce`).
    var claim: @Sendable ([AnswerClaim]) throws -> [(any Error)?]
}

/// The statements of the retention path a backend runs prepared, each what ``SQLOfferStore`` would run through
/// SQLKit: the customers holding an original transaction; a customer's facts and the answer stored under a key;
/// a batch of claims, each of a key with its answer and the signature's record, one outcome per claim as
/// ``IssuedSignatureWriter/claim``'s (its own transaction, durable when it returns).
struct PreparedAnswerStatements: Sendable {
    var customers: @Sendable (_ originalTransactionId: String) async throws -> [CustomerKey]
    var factsAndAnswer: @Sendable (_ key: CustomerKey, _ answerKey: String) async throws -> (facts: String?, answer: String?)
    var claim: @Sendable ([AnswerClaim]) async throws -> [(any Error)?]
    /// ``CustomerFactsStore/bindingRead(originalTransactionId:candidate:)`` in one statement: the holders (in the
    /// order of their keys) and the candidate's stored facts.
    var bindingRead: @Sendable (_ originalTransactionId: String, _ candidate: CustomerKey) async throws -> (owners: [CustomerKey], facts: String?)
}

/// An idempotent flow's first answer to store under its key, with the signature it records (a retention answer
/// under its `requestIdentifier`): both written, or neither.
struct AnswerClaim: Sendable {
    var answerKey: String
    var answer: String
    var createdAt: Int64
    var record: IssuedSignature
}

/// A claim's key was answered before (a retry that raced the first request): nothing was written for it.
struct AnswerAlreadyStored: Error {}
