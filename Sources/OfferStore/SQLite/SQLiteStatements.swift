// sqlite-nio's copy of SQLite: one library, so the file locks of these connections see sqlite-nio's.
import VaporCSQLite

/// What the store's own SQLite connections (``SQLiteLogWriter``, ``SQLiteCustomerReader``) share when they call
/// SQLite directly, statements prepared once: opening, preparing, binding text and reading it back, and turning a
/// result code into the store's error.
enum SQLiteStatements {
    /// Opens `path` as sqlite-nio opens its connections (URI paths, extended result codes), without CREATE: the file
    /// exists. The handle is returned even when opening failed (it must still be closed), with the result code.
    static func open(_ path: String) -> (handle: OpaquePointer?, result: Int32) {
        var handle: OpaquePointer?
        let result = sqlite_nio_sqlite3_open_v2(
            path,
            &handle,
            SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI | SQLITE_OPEN_EXRESCODE,
            nil
        )
        return (handle, result)
    }

    /// `sql` prepared once, to be run many times (`SQLITE_PREPARE_PERSISTENT`).
    static func prepare(_ sql: String, on connection: OpaquePointer?) throws(OfferStoreError) -> OpaquePointer? {
        var statement: OpaquePointer?
        try check(sqlite_nio_sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil), on: connection)
        return statement
    }

    /// Makes `statement` ready to run again; its bindings stay, and each use binds every parameter anew.
    ///
    /// Not `sqlite3_clear_bindings`: it marks as expired any statement whose plan SQLite tied to a bound value (as
    /// SQLite 3.54 does for an equality it weighs by whether the value is 0 or 1), and an expired statement is
    /// prepared again at its next step — about 14 µs, a third of a customer's read, on every use.
    static func reset(_ statement: OpaquePointer?) {
        sqlite_nio_sqlite3_reset(statement)
    }

    /// Binds `text` to parameter `index` of `statement` (copied now); SQLite's result code.
    static func bind(_ text: String, at index: Int32, in statement: OpaquePointer?) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { characters in
                // A nil pointer would bind NULL: an empty string binds as "" (SQLite reads none of it).
                withUnsafePointer(to: CChar(0)) { empty in
                    sqlite_nio_sqlite3_bind_text64(
                        statement,
                        index,
                        characters.baseAddress ?? empty,
                        UInt64(characters.count),
                        SQLITE_TRANSIENT,
                        UInt8(SQLITE_UTF8)
                    )
                }
            }
        }
    }

    /// Column `column`'s text, `nil` when it is NULL.
    static func text(_ statement: OpaquePointer?, _ column: Int32) -> String? {
        guard let bytes = sqlite_nio_sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// Throws ``failure(_:on:)`` unless `result` is `SQLITE_OK`.
    static func check(_ result: Int32, on connection: OpaquePointer?) throws(OfferStoreError) {
        guard result == SQLITE_OK else { throw failure(result, on: connection) }
    }

    /// The store's error for a result code: the connection's message when it has one, else the code's.
    static func failure(_ result: Int32, on connection: OpaquePointer?) -> OfferStoreError {
        let message =
            connection.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite_nio_sqlite3_errstr(result))
        return OfferStoreError(.unavailable, "SQLite store: \(message).")
    }
}

/// The "copy the value now" destructor (a macro of sqlite3.h that Swift does not import).
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
