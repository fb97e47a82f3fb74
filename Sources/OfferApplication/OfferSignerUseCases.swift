import AppStoreServerAPI
import Logging
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

    // policy, retention, notifications
    /// The policy in force, its dry-run and its application to every replica.
    public let policy: PolicyAdministration
    /// Retention Messaging's set-up at Apple and what the store recorded of it.
    public let retention: RetentionAdministration
    /// App Store Server Notifications; `nil` when the service takes none (no store, or no app it can verify them for).
    public let notifications: NotificationIngestion?

    /// The use cases over a service's store and keys.
    /// - Parameters:
    ///   - service: the offer service, whose store the use cases share.
    ///   - keyManager: the keys admins manage; `nil`: no key administration.
    ///   - retentionMessaging: what Retention Messaging is set up at Apple with; `nil`: the service's App Store Server
    ///     API configuration at Apple's documented rates (none when the API is not configured).
    public init(service: OfferService, keyManager: KeyManager?, retentionMessaging: RetentionMessagingSetup? = nil) {
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

        // policy, retention, notifications
        self.policy = PolicyAdministration(
            documents: store,
            audit: store.map { AuditTrail(log: $0) },
            policies: service.policyHolder,
            servedApps: Set(service.apps.keys),
            replay: { candidate, days in try await service.dryRun(candidate, days: days) }
        )
        self.retention = RetentionAdministration(
            setup: retentionMessaging ?? Self.retentionMessaging(of: service),
            catalogues: store,
            documents: store,
            audit: store.map { AuditTrail(log: $0) },
            policies: service.policyHolder
        )
        self.notifications = service.notifications.map { NotificationIngestion(ingestor: $0) }
    }

    /// Closes the store the use cases share, flushing what is queued: the end of a tool's run (`offer-signer policy
    /// dry-run`, `retention …`). Nothing to do without a store.
    public func closeStore() async throws {
        try await service.store?.close()
    }

    /// The Retention Messaging set-up of a service: the App Store Server API's configuration of each app it has a
    /// client for (none: every set-up is refused as not configured), recording in its store.
    static func retentionMessaging(of service: OfferService) -> RetentionMessagingSetup? {
        try? RetentionMessagingSetup(
            configurations: service.appStoreClients.mapValues(\.configuration),
            store: service.store,
            logger: Logger(label: "offer-signer.retention-messaging")
        )
    }
}
