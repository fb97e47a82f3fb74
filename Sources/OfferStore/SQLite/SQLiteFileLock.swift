import Foundation
import OfferErrors
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A server's hold on its SQLite file: an exclusive advisory lock (`flock`) on `<file>.lock` beside it, held until
/// ``release()`` (or the process ends), with the holder's process ID written in the lock file.
///
/// Two `offer-signer serve` processes on one file would both run — SQLite serializes their writes — but each
/// waits on the other's lock, and its group commit and one-customer-at-a-time guarantees hold only within one
/// process. The second is refused at start-up instead, with the first's PID. The commands that only read the file
/// (`policy dry-run`, `eligibility explain`, `verify`, …) take no lock, so they run beside a server.
///
/// The lock is on the file's real path (symbolic links resolved), so two names of one file take one lock. `flock`
/// locks are not shared between two opens of the file, even within one process, and the kernel drops them with the
/// process, so a server that was killed leaves nothing to clean up (a stale PID in the file is only text).
///
/// ## Usage
///
/// ```swift
/// let lock = try SQLiteFileLock(databasePath: "/var/lib/offer-signer/store.sqlite")
/// defer { lock.release() }
/// ```
public final class SQLiteFileLock: Sendable {
    /// The lock file: the database's real path with `.lock` appended.
    public let path: String
    /// The lock file's descriptor, which holds the lock; -1 once released.
    private let descriptor: Mutex<Int32>

    /// Takes the lock, or fails at once if another holds it.
    /// - Throws: ``OfferStoreError`` `storeInUse` naming the holder's PID, when another process (or another lock in
    ///   this one) holds it; `unavailable` when the lock file cannot be opened.
    public init(databasePath: String) throws(OfferStoreError) {
        path = Self.lockPath(forDatabase: databasePath)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw OfferStoreError(.unavailable, "Cannot open the SQLite store's lock file \(path): \(reason).")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            let holder = Self.holder(of: descriptor)
            close(descriptor)
            guard reason == EWOULDBLOCK else {
                throw OfferStoreError(
                    .unavailable,
                    "Cannot lock the SQLite store's lock file \(path): \(String(cString: strerror(reason)))."
                )
            }
            throw OfferStoreError(
                .storeInUse,
                """
                the SQLite file \(databasePath) is in use by another offer-signer \
                serve\(holder.map { " (PID \($0))" } ?? "") (it holds \(path)); stop it first, or give this one a \
                file of its own. Only one server may use a SQLite file; several replicas share PostgreSQL.
                """
            )
        }
        // The holder's PID, for the message a second server gives.
        let text = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        self.descriptor = Mutex(descriptor)
    }

    deinit { release() }

    /// Lets the lock go (closing the lock file; the file itself stays).
    public func release() {
        // Closing the one descriptor that holds a flock releases it; closed once (the number may be reused after).
        let held = descriptor.withLock { descriptor in
            defer { descriptor = -1 }
            return descriptor
        }
        if held >= 0 { close(held) }
    }

    /// `<real path of the database>.lock`; the path as given when it cannot be resolved (not created yet).
    static func lockPath(forDatabase databasePath: String) -> String {
        guard let resolved = realpath(databasePath, nil) else { return databasePath + ".lock" }
        defer { free(resolved) }
        return String(cString: resolved) + ".lock"
    }

    /// The PID written in the lock file, if it reads as one.
    private static func holder(of descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 31, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer.prefix(count), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
