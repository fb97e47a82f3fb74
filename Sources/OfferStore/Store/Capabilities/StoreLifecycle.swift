import OfferModel

/// The store as a whole: its schema, its connections, its health, and what replicas sharing it share.
public protocol StoreLifecycle: Sendable {
    /// Creates or upgrades the schema (versioned migrations); safe to run on every start.
    func migrate() async throws

    /// Opens the connections the store keeps and prepares the signing and retention paths' statements on each, so
    /// that the first requests after start-up do not wait for it (a server calls it after ``migrate()``). A
    /// failure is logged, not thrown: the statements are then prepared at their first use.
    func warmUp() async

    /// Checks that the store answers (for `/readyz`).
    func ping() async throws

    /// Flushes what is queued and closes connections.
    func close() async throws

    /// Rate limits every replica on this store shares (PostgreSQL), or `nil` where one process serves the store (a
    /// SQLite file, memory): its own limits are then the fleet's.
    var sharedLimits: (any SharedLimitStore)? { get }
}

extension StoreLifecycle {
    /// A store without connections to open has nothing to warm.
    public func warmUp() async {}
    /// A store no other process shares shares no limits.
    public var sharedLimits: (any SharedLimitStore)? { nil }
}
