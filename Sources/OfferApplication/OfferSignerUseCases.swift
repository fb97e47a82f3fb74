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
    }
}
