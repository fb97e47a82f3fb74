import Dispatch
import OfferModel
// sqlite-nio's copy of SQLite (its C target, reached through SQLiteNIO): the same library as every other
// connection of the process, so SQLite's file locks see each other — a second copy of SQLite in one process would
// not, and could corrupt the file.
import VaporCSQLite

/// The group commit's writer for a SQLite file: a batch of issued signatures — or of retention answers' claims
/// with their signatures (``claimOnQueue(_:)``), or of the decision log (``writeDecisionsOnQueue(_:)``) —
/// in one transaction on a connection of its own, with its statements prepared once, on a serial queue of its own.
///
/// Through SQLKit and sqlite-nio a batch cost three trips to sqlite-nio's thread pool (BEGIN, INSERT, COMMIT),
/// a fresh parse of a multi-row INSERT, every value encoded twice, and a trip to the event loop for every row
/// returned: ~55 µs a signature, four fifths of the log's cost, against ~5 µs for the disk itself (measured:
/// docs/PERFORMANCE.md, "The log's writer"). Here a batch is one trip: `BEGIN IMMEDIATE`, the prepared INSERT
/// bound and stepped once per record, `COMMIT` — durable when it returns (WAL, `synchronous=FULL`, like the
/// store's other connection).
///
/// A record refused by the unique index (its timestamp and nonce were recorded before) fails alone: its INSERT is
/// undone by SQLite, the others go on. Any other error rolls the batch back and fails it whole.
///
/// The store's writer connection and this one never write at once: ``SQLiteBackend`` runs each batch inside its
/// write gate, so neither waits on the other's lock.
final class SQLiteLogWriter: @unchecked Sendable {
    // @unchecked: the connection and its statements are touched only by blocks on `queue`, one at a time.
    /// The queue every use of the connection runs on (``writeOnQueue(_:)`` is called on it by the group commit).
    let queue = DispatchQueue(label: "offer-signer.sqlite-log-writer")
    private let path: String
    /// `PRAGMA busy_timeout`: how long a batch waits for another process's lock on the file.
    private let busyTimeout: Duration
    private var connection: OpaquePointer?
    private var begin: OpaquePointer?
    private var insert: OpaquePointer?
    private var addToDaily: OpaquePointer?
    private var claimAnswer: OpaquePointer?
    private var unclaimAnswer: OpaquePointer?
    private var insertDecision: OpaquePointer?
    private var addToDecisionDaily: OpaquePointer?
    private var commit: OpaquePointer?
    private var rollback: OpaquePointer?
    private var closed = false

    /// - Parameters:
    ///   - path: the SQLite file; opened at the first batch (after the migrations have made the table).
    ///   - busyTimeout: how long a batch waits for another process's lock on the file before it fails.
    init(path: String, busyTimeout: Duration = defaultStoreTimeout) {
        self.path = path
        self.busyTimeout = busyTimeout
    }

    /// A duration in whole milliseconds (`PRAGMA busy_timeout`'s unit), at least 1.
    static func milliseconds(_ duration: Duration) -> Int {
        max(1, Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    /// Writes `records` in one transaction; one outcome per record (`nil`: written, or `duplicateNonce`). Throws
    /// when the batch is not written at all.
    func write(_ records: [IssuedSignature]) async throws -> [(any Error)?] {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.writeOnQueue(records) })
            }
        }
    }

    /// Closes the connection; a later ``write(_:)`` fails.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.closeOnQueue()
                continuation.resume()
            }
        }
    }

    deinit {
        // Nothing else holds the writer here: no block of `queue` can be running.
        closeOnQueue()
    }

    // MARK: on the queue

    /// ``write(_:)`` on ``queue`` itself: called only from a block running on it.
    func writeOnQueue(_ records: [IssuedSignature]) throws -> [(any Error)?] {
        try inTransaction {
            var outcomes: [(any Error)?] = []
            outcomes.reserveCapacity(records.count)
            for record in records {
                outcomes.append(try append(record))
            }
            try addToDailyCounts(zip(records, outcomes).lazy.filter { $0.1 == nil }.map(\.0))
            return outcomes
        }
    }

    /// Stores each claim's answer under its key and records its signature, in one transaction for the batch, on
    /// ``queue``: one outcome per claim — `nil` (stored and recorded), ``AnswerAlreadyStored`` (the key was answered
    /// before: nothing written for it) or `duplicateNonce` (the signature was recorded before: its claim undone).
    func claimOnQueue(_ claims: [AnswerClaim]) throws -> [(any Error)?] {
        try inTransaction {
            if claimAnswer == nil {  // at the first claim: a log writer may serve a file without answers (tests)
                claimAnswer = try prepare(
                    "INSERT INTO stored_answers (answer_key, answer, created_at) VALUES (?, ?, ?) ON CONFLICT (answer_key) DO NOTHING"
                )
                unclaimAnswer = try prepare("DELETE FROM stored_answers WHERE answer_key = ?")
            }
            var outcomes: [(any Error)?] = []
            var written: [IssuedSignature] = []
            outcomes.reserveCapacity(claims.count)
            for claim in claims {
                try bind(claim.answerKey, at: 1, in: claimAnswer)
                try bind(claim.answer, at: 2, in: claimAnswer)
                try check(sqlite_nio_sqlite3_bind_int64(claimAnswer, 3, claim.createdAt))
                try run(claimAnswer)
                guard sqlite_nio_sqlite3_changes(connection) == 1 else {
                    outcomes.append(AnswerAlreadyStored())
                    continue
                }
                if let refusal = try append(claim.record) {
                    try bind(claim.answerKey, at: 1, in: unclaimAnswer)
                    try run(unclaimAnswer)
                    outcomes.append(refusal)
                } else {
                    written.append(claim.record)
                    outcomes.append(nil)
                }
            }
            try addToDailyCounts(written)
            return outcomes
        }
    }

    /// Writes a batch of the decision log in one transaction, on ``queue``: each decision with its facts snapshot
    /// (one written before is skipped: a batch written again after a failure doubles nothing), then the days' counts
    /// of those written (``DecisionRollup``). The statements are prepared at the first batch.
    ///
    /// The batch is committed without a flush of its own (`synchronous=NORMAL` for its transaction): in WAL mode its
    /// pages reach the disk with the next signature batch's flush, which covers every frame written before it. The
    /// log's answer never waits for it either way; what a power cut can cost is the decisions of that last moment,
    /// as it costs those still queued (docs/store.md "The decision log").
    func writeDecisionsOnQueue(_ records: [PolicyDecisionRecord]) throws {
        try inTransaction(flushed: false) {
            // At the first batch (a log writer may serve a file without the decision log: tests); each statement
            // again until it is prepared.
            if insertDecision == nil {
                insertDecision = try prepare(
                    """
                    INSERT INTO policy_decisions (\(Self.decisionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
                    ON CONFLICT (decided_at, id) DO NOTHING
                    """
                )
            }
            if addToDecisionDaily == nil {
                addToDecisionDaily = try prepare(
                    """
                    INSERT INTO decision_daily (day, granted, decisions) VALUES (?, ?, ?) \
                    ON CONFLICT (day, granted) DO UPDATE SET decisions = decision_daily.decisions + excluded.decisions
                    """
                )
            }
            let statement = insertDecision
            var inserted: [DecisionRollup.Day: Int64] = [:]
            for record in records {
                try check(sqlite_nio_sqlite3_bind_int64(statement, 1, record.decidedAt))
                try check(sqlite_nio_sqlite3_bind_int64(statement, 2, record.identifier))
                try bind(record.channel, at: 3, in: statement)
                try bind(record.bundleIdentifier, at: 4, in: statement)
                try bind(record.productIdentifier, at: 5, in: statement)
                try bind(record.offerIdentifier, at: 6, in: statement)
                try bind(record.retentionEntry, at: 7, in: statement)
                try bind(record.customerHash, at: 8, in: statement)
                try bind(record.policyVersion, at: 9, in: statement)
                try check(sqlite_nio_sqlite3_bind_int64(statement, 10, record.granted ? 1 : 0))
                try bind(record.reasons, at: 11, in: statement)
                try check(sqlite_nio_sqlite3_bind_int64(statement, 12, record.lookbackSeconds))
                try bind(record.factsHash, at: 13, in: statement)
                try bind(record.experimentIdentifier, at: 14, in: statement)
                try bind(record.experimentVariant, at: 15, in: statement)
                try bind(record.factsSnapshot, at: 16, in: statement)
                try run(statement)
                // Counted when written, not when skipped (``DecisionRollup``: a batch written again counts nothing twice).
                if sqlite_nio_sqlite3_changes(connection) == 1 {
                    inserted[DecisionRollup.Day(day: IssuedRollup.dayOf(record.decidedAt), granted: record.granted ? 1 : 0), default: 0] += 1
                }
            }
            for (key, count) in inserted.sorted(by: { $0.key < $1.key }) {
                try check(sqlite_nio_sqlite3_bind_int64(addToDecisionDaily, 1, key.day))
                try check(sqlite_nio_sqlite3_bind_int64(addToDecisionDaily, 2, key.granted))
                try check(sqlite_nio_sqlite3_bind_int64(addToDecisionDaily, 3, count))
                try run(addToDecisionDaily)
            }
        }
    }

    /// The columns of a decision, in the order ``writeDecisionsOnQueue(_:)`` binds them.
    private static let decisionColumns = """
        decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, retention_entry, customer_hash, policy_version, \
        granted, reasons, lookback_seconds, facts_hash, experiment_identifier, experiment_variant, facts
        """

    /// Runs `body` between `BEGIN IMMEDIATE` and `COMMIT` (durable when it returns); rolls back when it throws.
    /// `flushed: false`: the commit is not flushed to the disk by itself (`synchronous=NORMAL` for this transaction;
    /// the next flushed commit flushes it).
    private func inTransaction<T>(flushed: Bool = true, _ body: () throws -> T) throws -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !closed else { throw OfferStoreError(.unavailable, "The store is closed.") }
        if connection == nil { try open() }
        if !flushed {
            // Executed each time, not prepared: SQLite applies this pragma when it compiles it.
            try check(sqlite_nio_sqlite3_exec(connection, "PRAGMA synchronous=NORMAL", nil, nil, nil))
            defer {
                // Never leave signatures to commit unflushed: a connection that cannot go back is closed, and the
                // next batch opens a fresh one (`synchronous=FULL`).
                if connection != nil, sqlite_nio_sqlite3_exec(connection, "PRAGMA synchronous=FULL", nil, nil, nil) != SQLITE_OK {
                    closeOnQueue()
                    closed = false
                }
            }
            return try inTransaction(body)
        }
        try run(begin)
        do {
            let value = try body()
            try run(commit)
            return value
        } catch {
            let rolledBack = sqlite_nio_sqlite3_step(rollback)
            sqlite_nio_sqlite3_reset(rollback)
            if rolledBack != SQLITE_DONE || sqlite_nio_sqlite3_get_autocommit(connection) == 0 {
                // Still inside the transaction (a failed ROLLBACK): it would hold the file's write lock and fail
                // every later BEGIN. Closing the connection ends it; the next batch opens a fresh one.
                closeOnQueue()
                closed = false
            }
            throw error
        }
    }

    /// Inserts one record: `nil`, or `duplicateNonce` when the unique index refuses it.
    private func append(_ record: IssuedSignature) throws -> (any Error)? {
        defer { SQLiteStatements.reset(insert) }
        // In the order of `IssuedSignatureInsert.columns`, bound one by one (no array of the record's strings).
        try bind(record.nonce, at: 1)
        try bind(record.keyIdentifier, at: 2)
        try bind(record.bundleIdentifier, at: 3)
        try bind(record.productIdentifier, at: 4)
        try bind(record.offerIdentifier, at: 5)
        try bind(record.applicationUsername, at: 6)
        try check(sqlite_nio_sqlite3_bind_int64(insert, 7, record.timestamp))
        try bind(record.format, at: 8)
        try bind(record.channel, at: 9)
        if let requestIdentifier = record.requestIdentifier {
            try bind(requestIdentifier, at: 10)
        } else {
            try check(sqlite_nio_sqlite3_bind_null(insert, 10))
        }
        let result = sqlite_nio_sqlite3_step(insert)
        if result == SQLITE_DONE { return nil }
        // Extended result codes (the connection is opened with them): the unique index's refusal, not NOT NULL.
        if result == SQLITE_CONSTRAINT_UNIQUE || result == SQLITE_CONSTRAINT_PRIMARYKEY {
            return OfferStoreError.duplicateNonce(record.nonce)
        }
        throw failure(result)
    }

    /// Adds the records written to `issued_daily` (``IssuedRollup``): one upsert per day and offer of the batch.
    private func addToDailyCounts(_ written: some Sequence<IssuedSignature>) throws {
        for (key, count) in IssuedRollup.dailyCounts(of: written) {
            defer { SQLiteStatements.reset(addToDaily) }
            try check(sqlite_nio_sqlite3_bind_int64(addToDaily, 1, key.day))
            try bind(key.bundleIdentifier, at: 2, in: addToDaily)
            try bind(key.productIdentifier, at: 3, in: addToDaily)
            try bind(key.offerIdentifier, at: 4, in: addToDaily)
            try bind(key.channel, at: 5, in: addToDaily)
            try check(sqlite_nio_sqlite3_bind_int64(addToDaily, 6, count))
            let result = sqlite_nio_sqlite3_step(addToDaily)
            guard result == SQLITE_DONE else { throw failure(result) }
        }
    }

    private func bind(_ text: String, at index: Int32, in statement: OpaquePointer? = nil) throws {
        try check(SQLiteStatements.bind(text, at: index, in: statement ?? insert))
    }

    /// Binds `text`, or NULL.
    private func bind(_ text: String?, at index: Int32, in statement: OpaquePointer?) throws {
        guard let text else { return try check(sqlite_nio_sqlite3_bind_null(statement, index)) }
        try bind(text, at: index, in: statement)
    }

    private func run(_ statement: OpaquePointer?) throws {
        defer { SQLiteStatements.reset(statement) }
        let result = sqlite_nio_sqlite3_step(statement)
        guard result == SQLITE_DONE else { throw failure(result) }
    }

    private func check(_ result: Int32) throws {
        try SQLiteStatements.check(result, on: connection)
    }

    private func failure(_ result: Int32) -> OfferStoreError {
        SQLiteStatements.failure(result, on: connection)
    }

    private func open() throws {
        let (handle, opened) = SQLiteStatements.open(path)
        connection = handle
        guard opened == SQLITE_OK else {
            let error = failure(opened)
            closeOnQueue()
            closed = false
            throw error
        }
        do {
            // As the store's writer connection: durable at COMMIT, wait for another process's lock, keep the
            // statement journal (one INSERT's undo) in memory.
            for pragma in ["PRAGMA synchronous=FULL", "PRAGMA busy_timeout=\(Self.milliseconds(busyTimeout))", "PRAGMA temp_store=MEMORY"] {
                try check(sqlite_nio_sqlite3_exec(connection, pragma, nil, nil, nil))
            }
            begin = try prepare("BEGIN IMMEDIATE")
            insert = try prepare("INSERT INTO issued_signatures (\(IssuedSignatureInsert.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
            addToDaily = try prepare(IssuedRollup.upsertText)
            commit = try prepare("COMMIT")
            rollback = try prepare("ROLLBACK")
        } catch {
            closeOnQueue()
            closed = false
            throw error
        }
    }

    /// The connection's `PRAGMA synchronous` (2: `FULL`), on ``queue``; opens the connection if it is not open.
    func synchronousOnQueue() throws -> Int32 {
        dispatchPrecondition(condition: .onQueue(queue))
        if connection == nil { try open() }
        let statement = try prepare("PRAGMA synchronous")
        defer { sqlite_nio_sqlite3_finalize(statement) }
        guard sqlite_nio_sqlite3_step(statement) == SQLITE_ROW else { throw failure(sqlite_nio_sqlite3_errcode(connection)) }
        return sqlite_nio_sqlite3_column_int(statement, 0)
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        try SQLiteStatements.prepare(sql, on: connection)
    }

    private func closeOnQueue() {
        for statement in [
            begin, insert, addToDaily, claimAnswer, unclaimAnswer, insertDecision, addToDecisionDaily, commit, rollback,
        ]
        where statement != nil {
            sqlite_nio_sqlite3_finalize(statement)
        }
        (begin, insert, addToDaily, commit, rollback) = (nil, nil, nil, nil, nil)
        (claimAnswer, unclaimAnswer, insertDecision, addToDecisionDaily) = (nil, nil, nil, nil)
        if let connection { sqlite_nio_sqlite3_close_v2(connection) }
        connection = nil
        closed = true
    }
}

// Macros of sqlite3.h that Swift does not import.
/// `SQLITE_CONSTRAINT | (8 << 8)`: a UNIQUE index refused the row.
private let SQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT | (8 << 8)
/// `SQLITE_CONSTRAINT | (6 << 8)`: a PRIMARY KEY refused the row.
private let SQLITE_CONSTRAINT_PRIMARYKEY = SQLITE_CONSTRAINT | (6 << 8)
