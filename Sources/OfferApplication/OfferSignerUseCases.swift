import OfferKeys
import OfferModel
import OfferStore

/// The application as its adapters (the HTTP routes, the console, the CLI, the demo) see it: one value holding each
/// use case, each built over only the store capabilities it uses. The use cases that need the customer store are
/// `nil` when there is none.
public struct OfferSignerUseCases: Sendable {
    /// Signing, retention, notifications, reports: what has not moved out of the offer service yet.
    public let service: OfferService
    /// Customers' facts, flags, grants and refreshes (`/admin/customers/…`); `nil` without a store.
    public let customers: CustomerAdministration?
    /// The issued-signature log and the audit as admins read them; `nil` without a store.
    public let logs: AdministrationLogs?
    /// The signing keys' administration; `nil` without a key manager.
    public let keys: KeyAdministration?
    /// The outcome reports (`store_unavailable` without a store).
    public let outcomes: OutcomeReporting
    /// The reports of the policy's experiments.
    public let experiments: ExperimentReporting

    // Operations and the console: what the server asks of the store without seeing it.
    /// Whether the store answers and what it last saw (`/readyz`, the console's overview).
    public let health: StoreHealth
    /// The console's sessions (in the store, shared by replicas; in memory without one), sign-ins audited.
    public let consoleSessions: ConsoleSessions
    /// One customer as the console shows them; `nil` without a store.
    public let customerView: CustomerView?
    /// The rate limits the replicas on this store share (PostgreSQL); `nil`: each replica keeps its own.
    public let sharedLimits: FleetRateLimits?

    /// The use cases over a service's store and keys.
    /// - Parameters:
    ///   - service: the offer service, whose store the use cases share.
    ///   - keyManager: the keys admins manage; `nil`: no key administration.
    public init(service: OfferService, keyManager: KeyManager?) {
        self.service = service
        let store = service.store
        self.customers = store.map { store in
            CustomerAdministration(
                customers: store,
                audit: AuditTrail(log: store),
                policies: service.policyHolder,
                appStoreRefresh: { (key: CustomerKey) async throws(OfferServiceError) -> CustomerFacts in
                    try await service.refreshFromAppStore(key)
                }
            )
        }
        self.outcomes = service.outcomeReporting
        self.experiments = service.experimentReporting
        self.logs = store.map { AdministrationLogs(signatures: $0, audit: $0) }
        self.keys = keyManager.map { manager in
            KeyAdministration(manager: manager, audit: store.map { $0 as any AuditLog }, signatureCounts: { service.signatureCountsByKey })
        }
        self.health = StoreHealth(store: store.map { $0 as any StoreLifecycle }, activity: store as? any StoreActivityReporting)
        self.consoleSessions = ConsoleSessions(store: store.map { $0 as any ConsoleSessionStore }, audit: store.map { $0 as any AuditLog })
        self.customerView = store.map { CustomerView(customers: $0, signatures: $0, decisions: $0, outcomes: $0) }
        self.sharedLimits = store?.sharedLimits.map(FleetRateLimits.init)
    }
}
