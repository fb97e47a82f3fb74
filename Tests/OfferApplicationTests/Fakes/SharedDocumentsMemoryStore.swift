import OfferModel
import OfferStore
import Synchronization

/// Shared documents in memory: a fake of the ``SharedDocuments`` capability. A replace is a compare-and-set on the
/// version, as the SQL stores' is (the next version, or nothing changes); `failing` makes every call throw.
final class SharedDocumentsMemoryStore: SharedDocuments {
    struct Unreachable: Error {}

    private let documents = Mutex<[String: StoredDocument]>([:])
    private let failure = Mutex(false)

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    func document(named name: String) async throws -> StoredDocument? {
        if failure.withLock({ $0 }) { throw Unreachable() }
        return documents.withLock { $0[name] }
    }

    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool {
        if failure.withLock({ $0 }) { throw Unreachable() }
        return documents.withLock { documents in
            guard version == (documents[name]?.version ?? 0) + 1 else { return false }
            documents[name] = StoredDocument(text: text, version: version)
            return true
        }
    }
}
