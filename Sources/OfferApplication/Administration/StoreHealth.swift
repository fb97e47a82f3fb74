import AppStoreServerAPI
import Foundation
import OfferModel
import OfferStore

/// Whether the customer store answers, and what it last saw: `/readyz` and the console's overview.
public struct StoreHealth: Sendable {
    let store: (any StoreLifecycle)?
    let activity: (any StoreActivityReporting)?

    /// - Parameters:
    ///   - store: the store to ping; `nil`: there is none (always ready, never reachable).
    ///   - activity: what reads the store's latest activity and decision counts; `nil`: not known.
    public init(store: (any StoreLifecycle)?, activity: (any StoreActivityReporting)?) {
        self.store = store
        self.activity = activity
    }

    /// Whether a store is configured.
    public var hasStore: Bool { store != nil }

    /// Returns when the store answers a ping within `timeout`, or at once without a store (`/readyz`). A ping left
    /// running past the bound ends at the store's own (a lease, a SQLite lock).
    /// - Throws: ``OfferServiceError`` `store_unavailable` when it does not.
    public func checkReady(within timeout: Duration) async throws(OfferServiceError) {
        guard let store else { return }
        guard (try? await withDeadline(timeout, { try await store.ping() })) != nil else { throw OfferServiceError.storeUnavailable }
    }

    /// Whether the store answers a ping (`false` without one).
    public func isReachable() async -> Bool {
        guard let store else { return false }
        return (try? await store.ping()) != nil
    }

    /// When the store last saw a signature and a notification; `nil` when it cannot say (no store, unreadable).
    public func latestActivity() async -> StoreActivity? {
        try? await activity?.latestActivity()
    }

    /// The decisions the decision log wrote from `from` (included) to `to` (excluded), granted and refused; `nil`
    /// when the store cannot count them.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func decisionCounts(from: Date, to: Date) async throws(OfferServiceError) -> (granted: Int, refused: Int)? {
        guard let activity else { return nil }
        return try await storeCall {
            try await activity.decisionCounts(since: Int64(from.timeIntervalSince1970 * 1000), until: Int64(to.timeIntervalSince1970 * 1000))
        }
    }
}
