import OfferModel

/// Small named documents every replica shares (key states, the policy), saved by compare-and-set.
public protocol SharedDocuments: Sendable {
    /// A small named document shared by every replica (key states set by admins), with its version, or `nil`.
    func document(named name: String) async throws -> StoredDocument?

    /// Saves a named document durably by compare-and-set: only if its stored version is `version - 1` (a
    /// document never saved counts as version 0). Never a blind overwrite.
    /// - Returns: `false`, writing nothing, when another writer saved a different version first.
    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool

    /// The names of documents (``document(named:)``) changed by any process sharing the store, as each change
    /// commits — PostgreSQL's LISTEN/NOTIFY; `"*"` when anything may have changed unheard (the listener
    /// reconnected). A store one process serves (a SQLite file) ends the stream at once: its process made every
    /// change itself.
    func documentChanges() -> AsyncStream<String>
}

extension SharedDocuments {
    /// A store no other process shares has no one else's changes to tell.
    public func documentChanges() -> AsyncStream<String> { AsyncStream { $0.finish() } }
}
