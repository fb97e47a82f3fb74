import OfferModel
import OfferStore

/// The rate-limit buckets every replica on one PostgreSQL store shares, as the server's shared token buckets and
/// App Store quota lease from them (docs/operations.md "Rate limits"): tokens leased, tokens given back, full buckets
/// forgotten. ``ApplicationStore/sharedLimits`` gives it; a SQLite file or a store in memory has none.
public struct FleetRateLimits: Sendable {
    let store: any SharedLimitStore

    /// The shared limits of a store (``StoreLifecycle/sharedLimits``).
    public init(_ store: any SharedLimitStore) {
        self.store = store
    }

    /// Takes up to `wanted` tokens from each bucket, every lease in one statement.
    /// - Returns: one grant a lease, in the order of `leases`.
    /// - Throws: the store's error when the database cannot be reached or refuses the statement (the caller then
    ///   decides alone).
    public func lease(_ leases: [SharedLimitLease]) async throws -> [SharedLimitGrant] {
        try await store.lease(leases)
    }

    /// Puts back tokens leased and not spent, in one statement.
    public func giveBack(_ tokens: [(bucket: String, count: Int)]) async throws {
        try await store.giveBack(tokens)
    }

    /// Forgets the buckets that have been full for a minute or more.
    public func purgeFullBuckets() async throws {
        try await store.purgeFullBuckets()
    }
}
