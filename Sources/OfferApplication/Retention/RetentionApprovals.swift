import AppStoreNotifications
import Foundation
import Logging
import Metrics
import OfferEligibility
import OfferModel
import OfferStore
import Synchronization

/// Which catalogue messages Apple has approved, per app and environment, as `retention sync` and `retention status`
/// last recorded them in the store (``RetentionCatalogueRecord``): read at most every ``timeToLive`` per app and
/// environment, so the real-time path reads the store rarely.
final class RetentionApprovals: Sendable {
    /// How long a read is used before the store is read again.
    static let timeToLive: Duration = .seconds(30)

    private struct Read: Sendable {
        var approved: Set<String>
        var at: ContinuousClock.Instant
    }

    private let reads = Mutex<[String: Read]>([:])

    /// The approved message identifiers of an app in an environment (`Production`, `Sandbox`); empty when the store
    /// has none recorded, or cannot be read (then nothing of the catalogue is answered until it can).
    func approvedMessages(bundleIdentifier: String, environment: String, store: (any RetentionCatalogueStore)?, logger: Logger) async -> Set<String> {
        let key = "\(bundleIdentifier) \(environment)"
        let now = ContinuousClock.now
        if let read = reads.withLock({ $0[key] }), now - read.at < Self.timeToLive { return read.approved }
        var approved: Set<String> = []
        if let store {
            do {
                approved = Set(
                    try await store.retentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment)
                        .filter { $0.kind == "message" && $0.state == "APPROVED" }.map(\.identifier)
                )
            } catch {
                logger.warning(
                    "the retention catalogue's approval states could not be read; its messages are not answered meanwhile",
                    metadata: [
                        "bundleIdentifier": "\(bundleIdentifier)", "error": "\(type(of: error))",
                    ]
                )
            }
        }
        reads.withLock { $0[key] = Read(approved: approved, at: now) }
        return approved
    }
}

extension RetentionAnswering {
    /// The entries that may answer: an entry naming a catalogue message (`message:`) only once Apple has approved
    /// that message in the request's environment, so an answer never names a message Apple has not approved; the
    /// entries after it (the policy's fallback) answer meanwhile. Each skipped entry is logged (debug; the metric
    /// counts it: `offer_signer_retention_not_approved_total{bundle, product}`). Entries naming a message by
    /// `messageIdentifier:` were uploaded by other means and are not checked.
    func approvedRetentionEntries(
        _ entries: [OfferPolicy.RetentionEntry],
        bundleIdentifier: String,
        productIdentifier: String,
        environment: AppStoreEnvironment?
    ) async -> [OfferPolicy.RetentionEntry] {
        guard entries.contains(where: { $0.messageName != nil }) else { return entries }
        let name = environment == .sandbox ? "Sandbox" : "Production"
        let approved = await approvals.approvedMessages(
            bundleIdentifier: bundleIdentifier,
            environment: name,
            store: pipeline.store,
            logger: logger
        )
        return entries.filter { entry in
            guard let message = entry.messageName, !approved.contains(entry.messageIdentifier) else { return true }
            Counter(label: "offer_signer_retention_not_approved_total", dimensions: [("bundle", bundleIdentifier), ("product", productIdentifier)])
                .increment()
            logger.debug(
                "a retention entry's message is not approved by Apple yet; the next entry answers",
                metadata: [
                    "productIdentifier": "\(productIdentifier)", "message": "\(message)", "environment": "\(name)",
                ]
            )
            return false
        }
    }
}
