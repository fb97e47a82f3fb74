import OfferModel
import OfferStore
import Synchronization

/// The retention catalogue's recorded states in memory: a fake of the ``RetentionCatalogueStore`` capability, one
/// list of records per app and environment, replaced whole; `failing` makes every call throw.
final class RetentionCatalogueMemoryStore: RetentionCatalogueStore {
    struct Unreachable: Error {}

    private let records = Mutex<[String: [RetentionCatalogueRecord]]>([:])
    private let failure = Mutex(false)

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
        self.records.withLock { $0["\(bundleIdentifier) \(environment)"] = records }
    }

    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord] {
        if failure.withLock({ $0 }) { throw Unreachable() }
        return records.withLock { $0["\(bundleIdentifier) \(environment)"] ?? [] }
    }
}
