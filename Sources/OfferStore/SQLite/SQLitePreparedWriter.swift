import Logging
import NIOCore
import NIOPosix
import OfferModel
import SQLKit
import SQLiteKit
import SQLiteNIO
import Synchronization
// sqlite-nio's copy of SQLite, as SQLiteLogWriter's: one library, so its file locks see the other connections'.
import VaporCSQLite

/// A write connection of a SQLite file for batches written with SQLKit's builders (the App Store notifications'
/// batches, ``SQLOfferStore/fileNotifications(_:backend:)``): each statement's SQL text is prepared once and kept,
/// and statements run on the caller's thread, one after the other, with no trip to sqlite-nio's thread pool.
///
/// Through sqlite-nio each statement of a batch was prepared anew and cost a trip to its thread pool and back to
/// an event loop; a notification runs about a dozen. The statements and what they write are the same: only how
/// they reach SQLite differs.
///
/// Used inside ``SQLiteBackend``'s write gate only (``SQLiteBackend/preparedWrite(_:)``), so this connection and the
/// store's other writers never write at once. Like the store's writer connection it commits with
/// `synchronous=NORMAL`; the caller is answered after ``SQLiteWALFlush`` has flushed the WAL past its commit.
final class SQLitePreparedWriter: Sendable {
    private let state: Mutex<Connection>

    /// The most statements kept prepared (the notification path has about twenty distinct texts; a statement whose
    /// text varies with its rows adds one per row count): past it every kept statement is finalized.
    static let maximumStatements = 128

    /// - Parameters:
    ///   - path: the SQLite file; opened at the first statement (after the migrations have made the tables).
    ///   - busyTimeout: how long a statement waits for another process's lock on the file before it fails.
    init(path: String, busyTimeout: Duration) {
        state = Mutex(Connection(path: path, busyTimeout: busyTimeout))
    }

    /// Runs `sql` with `binds` to its end; the rows it returned.
    func run(_ sql: String, _ binds: [SQLiteData]) throws(OfferStoreError) -> [SQLitePreparedRow] {
        try state.withLock { (connection: inout Connection) throws(OfferStoreError) -> [SQLitePreparedRow] in
            try connection.run(sql, binds)
        }
    }

    /// Closes the connection; a later statement opens it again.
    func close() {
        state.withLock { $0.close() }
    }

    /// The statements and the handle, touched only under the lock.
    private struct Connection: ~Copyable {
        let path: String
        let busyTimeout: Duration
        var handle: OpaquePointer?
        var statements: [String: OpaquePointer] = [:]

        init(path: String, busyTimeout: Duration) {
            self.path = path
            self.busyTimeout = busyTimeout
        }

        deinit {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
        }

        mutating func run(_ sql: String, _ binds: [SQLiteData]) throws(OfferStoreError) -> [SQLitePreparedRow] {
            if handle == nil { try open() }
            let statement = try prepared(sql)
            defer { SQLiteStatements.reset(statement) }
            // Every parameter is bound anew: one the caller gives no value for is NULL, as SQLite leaves an unbound one.
            for index in Int32(binds.count)..<max(Int32(binds.count), sqlite_nio_sqlite3_bind_parameter_count(statement)) {
                try SQLiteStatements.check(sqlite_nio_sqlite3_bind_null(statement, index + 1), on: handle)
            }
            for (offset, value) in binds.enumerated() {
                try SQLiteStatements.check(Self.bind(value, at: Int32(offset + 1), in: statement), on: handle)
            }
            var rows: [SQLitePreparedRow] = []
            var columns: [String]?
            while true {
                let result = sqlite_nio_sqlite3_step(statement)
                if result == SQLITE_DONE { return rows }
                guard result == SQLITE_ROW else { throw SQLiteStatements.failure(result, on: handle) }
                let count = sqlite_nio_sqlite3_column_count(statement)
                if columns == nil {
                    columns = (0..<count).map { column in
                        sqlite_nio_sqlite3_column_name(statement, column).map { String(cString: $0) } ?? ""
                    }
                }
                rows.append(SQLitePreparedRow(columns: columns ?? [], values: (0..<count).map { Self.value(statement, $0) }))
            }
        }

        mutating func close() {
            for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
            statements = [:]
            if let handle { sqlite_nio_sqlite3_close_v2(handle) }
            handle = nil
        }

        private mutating func prepared(_ sql: String) throws(OfferStoreError) -> OpaquePointer {
            if let statement = statements[sql] { return statement }
            if statements.count >= SQLitePreparedWriter.maximumStatements {
                for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
                statements = [:]
            }
            guard let statement = try SQLiteStatements.prepare(sql, on: handle) else {
                // An empty text prepares to nothing: nothing of the store's is empty.
                throw OfferStoreError(.unavailable, "SQLite store: an empty statement.")
            }
            statements[sql] = statement
            return statement
        }

        private mutating func open() throws(OfferStoreError) {
            let (opened, result) = SQLiteStatements.open(path)
            handle = opened
            do throws(OfferStoreError) {
                guard result == SQLITE_OK else { throw SQLiteStatements.failure(result, on: opened) }
                // As the store's writer connection: the WAL written at COMMIT and flushed by ``SQLiteWALFlush``
                // after the write gate is released, another process's lock waited for, the statement journal in
                // memory.
                for pragma in [
                    "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=\(SQLiteLogWriter.milliseconds(busyTimeout))", "PRAGMA temp_store=MEMORY",
                ] {
                    try SQLiteStatements.check(sqlite_nio_sqlite3_exec(handle, pragma, nil, nil, nil), on: handle)
                }
            } catch {
                close()
                throw error
            }
        }

        private static func bind(_ value: SQLiteData, at index: Int32, in statement: OpaquePointer) -> Int32 {
            switch value {
            case .integer(let integer): sqlite_nio_sqlite3_bind_int64(statement, index, Int64(integer))
            case .float(let double): sqlite_nio_sqlite3_bind_double(statement, index, double)
            case .text(let text): SQLiteStatements.bind(text, at: index, in: statement)
            case .null: sqlite_nio_sqlite3_bind_null(statement, index)
            case .blob(let buffer):
                buffer.withUnsafeReadableBytes { bytes in
                    sqlite_nio_sqlite3_bind_blob64(statement, index, bytes.baseAddress, UInt64(bytes.count), SQLITE_TRANSIENT)
                }
            }
        }

        private static func value(_ statement: OpaquePointer, _ column: Int32) -> SQLiteData {
            switch sqlite_nio_sqlite3_column_type(statement, column) {
            case SQLITE_INTEGER: .integer(SQLiteInt64(sqlite_nio_sqlite3_column_int64(statement, column)))
            case SQLITE_FLOAT: .float(sqlite_nio_sqlite3_column_double(statement, column))
            case SQLITE_TEXT: SQLiteStatements.text(statement, column).map { .text($0) } ?? .null
            case SQLITE_BLOB:
                {
                    let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
                    var buffer = ByteBufferAllocator().buffer(capacity: count)
                    if let bytes = sqlite_nio_sqlite3_column_blob(statement, column) {
                        buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
                    }
                    return .blob(buffer)
                }()
            default: .null
            }
        }
    }
}

/// A row a ``SQLitePreparedWriter`` statement returned, decoded as sqlite-kit decodes its rows.
struct SQLitePreparedRow: SQLRow {
    let columns: [String]
    let values: [SQLiteData]

    var allColumns: [String] { columns }

    func contains(column: String) -> Bool { columns.contains(column) }

    func decodeNil(column: String) throws -> Bool {
        guard let index = columns.firstIndex(of: column) else { return true }
        return values[index] == .null
    }

    func decode<D: Decodable>(column: String, as _: D.Type) throws -> D {
        guard let index = columns.firstIndex(of: column) else {
            throw OfferStoreError(.unavailable, "SQLite store: a row without the column \(column).")
        }
        return try SQLiteDataDecoder().decode(D.self, from: values[index])
    }
}

/// SQLKit's view of a ``SQLitePreparedWriter``: the store's builders render for SQLite (sqlite-kit's dialect and
/// value encoding), and each statement runs on the caller's thread through a statement prepared once.
struct SQLitePreparedDatabase: SQLDatabase {
    let writer: SQLitePreparedWriter
    let logger: Logger

    var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
    var dialect: any SQLDialect { SQLiteDialect() }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        do {
            try run(query, onRow)
            return eventLoop.makeSucceededVoidFuture()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try run(query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }

    private func run(_ query: any SQLExpression, _ onRow: @Sendable (any SQLRow) -> Void) throws {
        let (sql, binds) = serialize(query)
        let encoder = SQLiteDataEncoder()
        let values = try binds.map { try encoder.encode($0) }
        for row in try writer.run(sql, values) { onRow(row) }
    }
}

/// The "copy the value now" destructor (a macro of sqlite3.h that Swift does not import).
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
