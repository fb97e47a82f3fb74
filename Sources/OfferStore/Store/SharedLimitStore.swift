import OfferModel

/// Token buckets every replica on one database shares (docs/operations.md "Rate limits"): a replica leases a few
/// tokens of a bucket at a time, spends them without asking again, and gives back what it did not spend, so that a
/// limit holds for the fleet without a round trip per request. PostgreSQL only (``OfferStore/sharedLimits``); a
/// SQLite file or a store in memory serves one process, whose own buckets are the fleet's.
///
/// A bucket is named by its caller; the name must not be a raw customer identifier or a credential (the server
/// names them by a keyed hash). Buckets that would be full again are forgotten: a forgotten bucket is a full one.
public protocol SharedLimitStore: Sendable {
    /// Takes up to `wanted` tokens from each bucket, every lease in one statement; refills each bucket first by
    /// the time since its last lease (the database's clock, the same for every replica).
    /// - Returns: one grant a lease, in the order of `leases`.
    /// - Throws: when the database cannot be reached (``OfferStoreError`` `unavailable`) or refuses the statement; the
    ///   caller then decides alone (``SharedLimitStore`` never fails a request by itself).
    func lease(_ leases: [SharedLimitLease]) async throws -> [SharedLimitGrant]

    /// Puts back tokens leased and not spent (never more than a bucket holds), in one statement.
    func giveBack(_ tokens: [(bucket: String, count: Int)]) async throws

    /// Forgets the buckets that have been full for a minute or more (the table stays as small as the set of
    /// buckets in use).
    func purgeFullBuckets() async throws
}
