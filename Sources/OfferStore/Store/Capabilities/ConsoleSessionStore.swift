import OfferModel

/// The web console's sessions, shared by every replica.
public protocol ConsoleSessionStore: Sendable {
    /// Keeps a console session (``ConsoleSessionRecord``) for every replica; expired sessions go, and beyond
    /// `limit` sessions the oldest.
    func saveConsoleSession(_ session: ConsoleSessionRecord, keepingAtMost limit: Int) async throws

    /// The console session of a cookie's digest, expired or not (the caller compares `expiresAt`), or `nil`.
    func consoleSession(digest: String) async throws -> ConsoleSessionRecord?

    /// Ends a console session on every replica.
    func deleteConsoleSession(digest: String) async throws
}
