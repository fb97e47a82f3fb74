import Dispatch
import OfferModel
import Synchronization
// sqlite-nio's copy of SQLite, as SQLiteLogWriter's: one library, so its file locks see the other connections'.
import VaporCSQLite

/// The read a decision under a customer's lock makes (``CustomerLockingStore/customerSnapshot(_:issuedSince:)``)
/// for a SQLite file: the customer's stored facts, as text, and their issued signatures since a time, through two
/// statements prepared once per connection, each connection on a serial queue of its own; and the reads of a
/// notification's binding (a customer's facts, the holders of an original transaction), through the same.
///
/// Through SQLKit and sqlite-nio the same two statements were built as SQL text, parsed again by SQLite and run as
/// two trips to sqlite-nio's thread pool, each row decoded through `Decodable` (docs/PERFORMANCE.md, "Where the
/// time goes"). Here a snapshot is both statements bound, stepped and reset, on the caller's thread when a reader
/// is free, else one trip to a reader's queue.
///
/// Its connections only read (WAL lets them read beside the writers); they open at the first read, after the
/// migrations have made the tables.
final class SQLiteCustomerReaders: Sendable {
    /// How many connections (and queues) read snapshots.
    static let count = 2

    private let readers: [SQLiteCustomerReader]
    /// The next reader a snapshot is handed to: each in turn.
    private let next = Atomic<Int>(0)

    /// - Parameters:
    ///   - path: the SQLite file.
    ///   - busyTimeout: how long a read waits for another process's lock (`PRAGMA busy_timeout`).
    init(path: String, busyTimeout: Duration) {
        readers = (0..<Self.count).map { SQLiteCustomerReader(path: path, busyTimeout: busyTimeout, index: $0) }
    }

    /// The customer's stored facts (their JSON text; `nil`: never heard of) and their issued signatures with
    /// `timestamp >= since` (Unix ms), newest first (then by nonce).
    func snapshot(_ key: CustomerKey, issuedSince since: Int64) async throws -> (facts: String?, issued: [IssuedSignature]) {
        try await onReader { reader in try reader.readSnapshot(key, issuedSince: since) }
    }

    /// ``snapshot(_:issuedSince:)`` on the caller's thread with the first reader free; `nil` when every reader is in
    /// use (nothing was read).
    func snapshotIfFree(_ key: CustomerKey, issuedSince since: Int64) -> Result<(facts: String?, issued: [IssuedSignature]), any Error>? {
        firstFree { reader in try reader.readSnapshot(key, issuedSince: since) }
    }

    /// The customers who hold an original transaction (`customer_transactions`), by app then name: a
    /// notification's binding reads them (``SQLOfferStore/customers(withOriginalTransactionId:)``).
    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        try await onReader { reader in try reader.readOwners(originalTransactionId) }
    }

    /// ``customers(withOriginalTransactionId:)`` and the stored facts of `candidate`, in one trip to a reader's queue.
    func bindingRead(originalTransactionId: String, candidate: CustomerKey) async throws -> (owners: [CustomerKey], facts: String?) {
        try await onReader { reader in
            (try reader.readOwners(originalTransactionId), try reader.readSnapshot(candidate, issuedSince: Int64.max).facts)
        }
    }

    /// Runs `body` with a reader: on the caller's own thread with the first reader free (each reader in turn
    /// first), so a read costs no hop to another thread and back; when every reader is in use, on the next one's
    /// queue, which waits for it there rather than here. A read takes tens of microseconds (pages from the OS's
    /// cache); in WAL mode a writer never makes it wait.
    private func onReader<T: Sendable>(_ body: @escaping @Sendable (SQLiteCustomerReader) throws -> T) async throws -> T {
        let turn = nextTurn()
        if let result = firstFree(from: turn, body) { return try result.get() }
        let reader = readers[turn]
        return try await withCheckedThrowingContinuation { continuation in
            reader.queue.async {
                continuation.resume(with: reader.whenFree(body))
            }
        }
    }

    /// The reader whose turn is next: each in turn.
    private func nextTurn() -> Int {
        Int(UInt(bitPattern: next.wrappingAdd(1, ordering: .relaxed).oldValue) % UInt(readers.count))
    }

    /// `body` on the caller's thread with the first reader free, from `turn` on; `nil` when every one is in use.
    private func firstFree<T: Sendable>(from turn: Int? = nil, _ body: (SQLiteCustomerReader) throws -> T) -> Result<T, any Error>? {
        let turn = turn ?? nextTurn()
        for offset in 0..<readers.count {
            if let result = readers[(turn + offset) % readers.count].ifFree(body) { return result }
        }
        return nil
    }

    /// How many times SQLite prepared the readers' statements again since they were first prepared (tests:
    /// ``SQLiteStatements/reset(_:)`` keeps it at zero).
    var repreparations: Int {
        readers.reduce(0) { total, reader in total + ((try? reader.whenFree { $0.repreparations }.get()) ?? 0) }
    }

    /// Closes every connection; a later read fails.
    func close() async {
        for reader in readers { await reader.close() }
    }
}

/// One connection of ``SQLiteCustomerReaders`` and its prepared statements.
final class SQLiteCustomerReader: @unchecked Sendable {
    // @unchecked: the connection and its statements are touched only with `inUse` held, by one thread at a time.
    /// Where a read waits for the reader when it is in use (``whenFree(_:)``).
    let queue: DispatchQueue
    /// Held while the connection is used.
    private let inUse = Mutex(())
    private let path: String
    private let busyTimeout: Duration
    private var connection: OpaquePointer?
    private var selectFacts: OpaquePointer?
    private var selectIssued: OpaquePointer?
    private var selectOwners: OpaquePointer?
    private var closed = false

    /// The columns read, in the order of ``IssuedSignature``'s initializer.
    private static let issuedColumns = """
        nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format, channel, \
        request_identifier
        """

    init(path: String, busyTimeout: Duration, index: Int) {
        self.path = path
        self.busyTimeout = busyTimeout
        queue = DispatchQueue(label: "offer-signer.sqlite-customer-reader-\(index)")
    }

    deinit {
        // Nothing else holds the reader here: no block of `queue` can be running.
        closeOnQueue()
    }

    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.inUse.withLock { _ in self.closeOnQueue() }
                continuation.resume()
            }
        }
    }

    /// `body` with this reader, on the caller's thread, if no one is using it; `nil` when someone is.
    func ifFree<T: Sendable>(_ body: (SQLiteCustomerReader) throws -> T) -> Result<T, any Error>? {
        inUse.withLockIfAvailable { _ in reading(body) }
    }

    /// `body` with this reader once it is free, on the caller's thread (its ``queue``'s).
    func whenFree<T: Sendable>(_ body: (SQLiteCustomerReader) throws -> T) -> Result<T, any Error> {
        inUse.withLock { _ in reading(body) }
    }

    /// `body` with this reader, `inUse` held by the caller.
    private func reading<T: Sendable>(_ body: (SQLiteCustomerReader) throws -> T) -> Result<T, any Error> {
        do { return .success(try body(self)) } catch { return .failure(error) }
    }

    /// ``SQLiteCustomerReaders/snapshot(_:issuedSince:)``, in ``ifFree(_:)`` or ``whenFree(_:)``.
    func readSnapshot(_ key: CustomerKey, issuedSince since: Int64) throws -> (facts: String?, issued: [IssuedSignature]) {
        try openIfNeeded()
        defer {
            SQLiteStatements.reset(selectFacts)
            SQLiteStatements.reset(selectIssued)
        }
        try bind(key.bundleIdentifier, at: 1, in: selectFacts)
        try bind(key.applicationUsername, at: 2, in: selectFacts)
        var facts: String?
        switch sqlite_nio_sqlite3_step(selectFacts) {
        case SQLITE_ROW: facts = text(selectFacts, 0)
        case SQLITE_DONE: facts = nil
        case let result: throw failure(result)
        }
        try bind(key.bundleIdentifier, at: 1, in: selectIssued)
        try bind(key.applicationUsername, at: 2, in: selectIssued)
        try check(sqlite_nio_sqlite3_bind_int64(selectIssued, 3, since))
        var issued: [IssuedSignature] = []
        while true {
            let result = sqlite_nio_sqlite3_step(selectIssued)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw failure(result) }
            let statement = selectIssued
            issued.append(
                IssuedSignature(
                    nonce: text(statement, 0) ?? "",
                    keyIdentifier: text(statement, 1) ?? "",
                    bundleIdentifier: text(statement, 2) ?? "",
                    productIdentifier: text(statement, 3) ?? "",
                    offerIdentifier: text(statement, 4) ?? "",
                    applicationUsername: text(statement, 5) ?? "",
                    timestamp: sqlite_nio_sqlite3_column_int64(statement, 6),
                    format: text(statement, 7) ?? "",
                    channel: text(statement, 8) ?? "api",
                    requestIdentifier: text(statement, 9)
                )
            )
        }
        return (facts, issued)
    }

    /// ``SQLiteCustomerReaders/repreparations``, in ``whenFree(_:)``.
    var repreparations: Int {
        [selectFacts, selectIssued, selectOwners].reduce(0) { total, statement in
            total + (statement.map { Int(sqlite_nio_sqlite3_stmt_status($0, SQLITE_STMTSTATUS_REPREPARE, 0)) } ?? 0)
        }
    }

    /// ``SQLiteCustomerReaders/customers(withOriginalTransactionId:)``, in ``ifFree(_:)`` or ``whenFree(_:)``.
    func readOwners(_ originalTransactionId: String) throws -> [CustomerKey] {
        try openIfNeeded()
        defer { SQLiteStatements.reset(selectOwners) }
        try bind(originalTransactionId, at: 1, in: selectOwners)
        var owners: [CustomerKey] = []
        while true {
            let result = sqlite_nio_sqlite3_step(selectOwners)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw failure(result) }
            owners.append(CustomerKey(bundleIdentifier: text(selectOwners, 0) ?? "", applicationUsername: text(selectOwners, 1) ?? ""))
        }
        return owners
    }

    /// Opens the connection and prepares the statements at the first read; a closed reader reads nothing.
    private func openIfNeeded() throws {
        guard !closed else { throw OfferStoreError(.unavailable, "The store is closed.") }
        if connection == nil { try open() }
    }

    private func text(_ statement: OpaquePointer?, _ column: Int32) -> String? {
        SQLiteStatements.text(statement, column)
    }

    private func bind(_ text: String, at index: Int32, in statement: OpaquePointer?) throws {
        try check(SQLiteStatements.bind(text, at: index, in: statement))
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
            try check(sqlite_nio_sqlite3_exec(connection, "PRAGMA busy_timeout=\(SQLiteLogWriter.milliseconds(busyTimeout))", nil, nil, nil))
            selectFacts = try prepare("SELECT facts FROM customers WHERE bundle_identifier = ? AND application_username = ?")
            selectIssued = try prepare(
                """
                SELECT \(Self.issuedColumns) FROM issued_signatures
                WHERE bundle_identifier = ? AND application_username = ? AND timestamp >= ? ORDER BY timestamp DESC, nonce
                """
            )
            selectOwners = try prepare(
                """
                SELECT bundle_identifier, application_username FROM customer_transactions WHERE original_transaction_id = ? \
                ORDER BY bundle_identifier, application_username
                """
            )
        } catch {
            closeOnQueue()
            closed = false
            throw error
        }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        try SQLiteStatements.prepare(sql, on: connection)
    }

    private func closeOnQueue() {
        for statement in [selectFacts, selectIssued, selectOwners] where statement != nil {
            sqlite_nio_sqlite3_finalize(statement)
        }
        (selectFacts, selectIssued, selectOwners) = (nil, nil, nil)
        if let connection { sqlite_nio_sqlite3_close_v2(connection) }
        connection = nil
        closed = true
    }
}
