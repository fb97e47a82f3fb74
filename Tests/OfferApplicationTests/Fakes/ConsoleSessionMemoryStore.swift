import OfferModel
import OfferStore
import Synchronization

/// Console sessions in memory: a fake of the ``ConsoleSessionStore`` capability, keeping at most the newest
/// `keepingAtMost` as the SQL stores do; `failing` makes every call throw.
final class ConsoleSessionMemoryStore: ConsoleSessionStore {
    struct Unreachable: Error {}

    private let sessions = Mutex<[String: ConsoleSessionRecord]>([:])
    private let failure = Mutex(false)

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    /// The sessions kept, by digest.
    var records: [String: ConsoleSessionRecord] { sessions.withLock { $0 } }

    private func check() throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
    }

    func saveConsoleSession(_ session: ConsoleSessionRecord, keepingAtMost limit: Int) async throws {
        try check()
        sessions.withLock { sessions in
            sessions[session.digest] = session
            while sessions.count > limit, let oldest = sessions.values.min(by: { $0.expiresAt < $1.expiresAt }) {
                sessions[oldest.digest] = nil
            }
        }
    }

    func consoleSession(digest: String) async throws -> ConsoleSessionRecord? {
        try check()
        return sessions.withLock { $0[digest] }
    }

    func deleteConsoleSession(digest: String) async throws {
        try check()
        sessions.withLock { $0[digest] = nil }
    }
}
