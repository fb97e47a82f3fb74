import AppStoreServerAPI
import Logging
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore

/// The application as its adapters (the HTTP routes, the console, the CLI, the demo) see it: one value holding each
/// use case, each built over only the store capabilities it uses. The use cases that need the customer store are
/// `nil` when there is none.
public struct OfferSignerUseCases: Sendable {
    /// Signing: legacy and JWS promotional offers, introductory-offer eligibility, the offers a customer may have.
    public let signing: Signing
    /// Verification of the signatures the service made, against every key it knows.
    public let verification: OfferVerification
    /// Retention Messaging's real-time requests, answered through the signing pipeline.
    public let retentionAnswers: RetentionAnswering
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

    /// The store the use cases share, closed by ``closeStore()``.
    private let store: (any OfferStore)?

    /// The use cases over one signing pipeline, its store and keys: the server's (`buildApplication`) and the tests'.
    /// - Parameters:
    ///   - pipeline: the signing pipeline, whose apps, keys, policy and store the use cases share.
    ///   - keyManager: the keys admins manage; `nil`: no key administration.
    ///   - retentionMessaging: what Retention Messaging is set up at Apple with; `nil`: the pipeline's App Store Server
    ///     API configuration at Apple's documented rates (none when the API is not configured).
    ///   - retentionDeadline: how long a retention request may take before the fallback message is answered.
    public init(
        pipeline: SigningPipeline,
        keyManager: KeyManager?,
        retentionMessaging: RetentionMessagingSetup? = nil,
        retentionDeadline: Duration = .milliseconds(500)
    ) {
        let store = pipeline.store
        self.store = store
        self.signing = Signing(pipeline: pipeline)
        self.verification = OfferVerification(keys: pipeline.keys)
        self.retentionAnswers = RetentionAnswering(pipeline: pipeline, deadline: retentionDeadline)
        self.customers = store.map { store in
            CustomerAdministration(
                customers: store,
                audit: AuditTrail(log: store),
                policies: pipeline.policyHolder,
                appStoreRefresh: { (key: CustomerKey) async throws(OfferServiceError) -> CustomerFacts in
                    try await pipeline.refreshFromAppStore(key)
                }
            )
        }
        self.outcomes = OutcomeReporting(store: store) { (bundleIdentifier: String) throws(OfferServiceError) -> Void in
            _ = try pipeline.app(named: bundleIdentifier)
        }
        self.experiments = ExperimentReporting(store: store, policies: pipeline.policyHolder)
        self.logs = store.map { AdministrationLogs(signatures: $0, audit: $0) }
        self.keys = keyManager.map { manager in
            KeyAdministration(manager: manager, audit: store.map { $0 as any AuditLog }, signatureCounts: { pipeline.signatureCountsByKey })
        }
        self.health = StoreHealth(store: store.map { $0 as any StoreLifecycle }, activity: store as? any StoreActivityReporting)
        self.consoleSessions = ConsoleSessions(store: store.map { $0 as any ConsoleSessionStore }, audit: store.map { $0 as any AuditLog })
        self.customerView = store.map { CustomerView(customers: $0, signatures: $0, decisions: $0, outcomes: $0) }
        self.sharedLimits = store?.sharedLimits.map(FleetRateLimits.init)

        // policy, retention, notifications
        self.policy = PolicyAdministration(
            documents: store,
            audit: store.map { AuditTrail(log: $0) },
            policies: pipeline.policyHolder,
            servedApps: Set(pipeline.apps.keys),
            replay: { candidate, days in try await pipeline.dryRun(candidate, days: days) }
        )
        self.retention = RetentionAdministration(
            setup: retentionMessaging ?? Self.retentionMessaging(of: pipeline),
            catalogues: store,
            documents: store,
            audit: store.map { AuditTrail(log: $0) },
            policies: pipeline.policyHolder
        )
        self.notifications = pipeline.notifications.map { NotificationIngestion(ingestor: $0) }
    }

    /// Closes the store the use cases share, flushing what is queued: the end of a tool's run (`offer-signer policy
    /// dry-run`, `retention …`). Nothing to do without a store.
    public func closeStore() async throws {
        try await store?.close()
    }

    /// The use cases a tool of the executable runs (`offer-signer eligibility explain`, `policy dry-run`,
    /// `retention …`, `notifications import`): the configured apps and policy over the store the tool opened, no
    /// signing keys, no key administration.
    /// - Parameters:
    ///   - apps: the apps configured (the policy's are added).
    ///   - policy: the policy configured (`OFFER_SIGNER_POLICY`), or `nil`.
    ///   - store: the store the tool opened (``ApplicationStore/open(databaseURL:timeout:serving:logger:)``), or `nil`.
    ///   - notifications: the App Store data verifier over that store, or `nil`.
    ///   - retentionMessaging: what Retention Messaging is set up at Apple with (`retention sync`, `go-live`), or `nil`.
    public static func forTools(
        apps: [AppConfiguration],
        policy: OfferPolicy?,
        store: ApplicationStore?,
        notifications: NotificationIngestor?,
        retentionMessaging: RetentionMessagingSetup? = nil
    ) -> OfferSignerUseCases {
        OfferSignerUseCases(
            pipeline: SigningPipeline(apps: apps, keyRing: .empty, policy: policy, store: store?.store, notifications: notifications),
            keyManager: nil,
            retentionMessaging: retentionMessaging
        )
    }

    /// The Retention Messaging set-up of a pipeline: the App Store Server API's configuration of each app it has a
    /// client for (none: every set-up is refused as not configured), recording in its store.
    static func retentionMessaging(of pipeline: SigningPipeline) -> RetentionMessagingSetup? {
        try? RetentionMessagingSetup(
            configurations: pipeline.appStoreClients.mapValues(\.configuration),
            store: pipeline.store,
            logger: Logger(label: "offer-signer.retention-messaging")
        )
    }
}
