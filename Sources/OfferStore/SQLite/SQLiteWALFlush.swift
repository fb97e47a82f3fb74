import Dispatch
import Glibc
import OfferModel
// sqlite-nio's copy of SQLite, as SQLiteLogWriter's: one library, so its file locks see the other connections'.
import VaporCSQLite

/// Makes a SQLite file's committed transactions durable after their locks are released: the store's writer
/// connection commits with `synchronous=NORMAL` (the WAL written, not flushed), and each writer then waits here
/// for one flush of the WAL that began after its COMMIT returned. Flushes run one at a time on a queue of their
/// own; everyone who asked while one ran shares the next (a group commit of flushes, ``GroupCommitQueue``).
///
/// Why: a transaction that holds the write lock through its own `fsync` makes every writer queued behind it wait
/// for that flush too (one customer's retention requests, 32 at a time, each waited for 32 flushes). Released
/// before the flush, the next writer runs while the disk works, and its caller — like this one's — is answered only
/// once a flush covers its commit. The WAL is written in commit order, so a flush that covers a commit covers
/// every earlier one: a transaction that read another's rows is never durable without them.
///
/// The flush goes through SQLite's own handle of the WAL (`SQLITE_FCNTL_JOURNAL_POINTER`) on a connection of its
/// own, so it flushes the file SQLite writes, whatever its name or state.
final class SQLiteWALFlush: @unchecked Sendable {
    // @unchecked: the connection is touched only by blocks on `queue`, one at a time.
    private let queue = DispatchQueue(label: "offer-signer.sqlite-wal-flush")
    private let path: String
    private var connection: OpaquePointer?
    private var directorySynced = false
    private var flushes: GroupCommitQueue<Bool>!

    /// - Parameter path: the SQLite file (in WAL mode, opened by the store's connections).
    init(path: String) {
        self.path = path
        flushes = GroupCommitQueue(maximumBatch: Int.max, queue: queue) { [unowned self] _ in
            try self.flushOnQueue()
            return []
        }
    }

    deinit {
        if let connection { sqlite_nio_sqlite3_close_v2(connection) }
    }

    /// Returns once everything committed to the file before the call is on disk.
    func flush() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            flushes.submit(true) { continuation.resume(with: $0) }
        }
    }

    private func flushOnQueue() throws {
        if connection == nil { try open() }
        var file: UnsafeMutablePointer<sqlite3_file>?
        try check(sqlite_nio_sqlite3_file_control(connection, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file))
        guard let file, let sync = file.pointee.pMethods?.pointee.xSync else {
            throw OfferStoreError(.unavailable, "SQLite store: the write-ahead log of \(path) is not open.")
        }
        try check(sync(file, SQLITE_SYNC_NORMAL))
        if !directorySynced {
            // The log file's own entry in its folder, once (SQLite syncs it after creating the file itself).
            let folder = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
            let descriptor = Glibc.open(folder.isEmpty ? "/" : folder, O_RDONLY)
            if descriptor >= 0 {
                _ = fsync(descriptor)
                Glibc.close(descriptor)
            }
            directorySynced = true
        }
    }

    private func open() throws {
        let (handle, opened) = SQLiteStatements.open(path)
        connection = handle
        do {
            try check(opened)
            // A read opens the connection's handle of the WAL, which it keeps until it is closed.
            try check(sqlite_nio_sqlite3_exec(connection, "PRAGMA busy_timeout=5000; PRAGMA schema_version", nil, nil, nil))
        } catch {
            if let connection { sqlite_nio_sqlite3_close_v2(connection) }
            connection = nil
            throw error
        }
    }

    private func check(_ result: Int32) throws {
        try SQLiteStatements.check(result, on: connection)
    }
}
