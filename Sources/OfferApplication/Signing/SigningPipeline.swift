import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import Metrics
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Synchronization

/// The one request pipeline every flow configures (``Signing``'s legacy, JWS and introductory-eligibility flows,
/// ``RetentionAnswering``'s answers): resolves the app, the product and the offer, applies the eligibility policy to
/// what the store knows of the customer, signs with the app's active key, self-verifies, records the signature in
/// the store before returning it, counts. The adapters never hold it: they reach it through the use cases of
/// ``OfferSignerUseCases``. No HTTP types here.
public final class SigningPipeline: Sendable {
    /// The apps served, by bundle identifier.
    public let apps: [String: AppConfiguration]
    /// The current keys.
    public let keys: KeyRingHolder
    /// The policy in force, replaced whole when a policy is applied to the fleet (``PolicyRefresher``).
    public let policyHolder: PolicyHolder
    /// The offer catalogue and eligibility policy in force; `nil` signs every well-formed request.
    public var policy: OfferPolicy? { policyHolder.policy }
    /// The customer store and issued-signature log; `nil` keeps nothing.
    public let store: (any OfferStore)?
    /// Overrides the introductory-offer decision (tests, embedders); `nil` uses the policy.
    public let introductoryOfferDecision: IntroductoryOfferDecision?
    /// Verifies App Store signed data and feeds the store; `nil` when there is no store or no app can verify.
    public let notifications: NotificationIngestor?
    /// The App Store Server API client of each app, by bundle identifier: asked for the facts of a customer the
    /// store does not know (``fetchMissingFacts(_:app:subscriptionGroupIdentifier:)``). Empty: never asked.
    public let appStoreClients: [String: AppStoreServerAPIClient]
    private let signaturesIssued: Counter
    private let jwsIssued: Counter
    let selfCheckFailures: Counter
    private let issuedByKey = Mutex<[String: Int]>([:])
    /// At most one policy dry-run at a time on this replica (``dryRun(_:days:)``).
    let dryRunSlot = DryRunSlot()

    /// Signatures made by this process, by key identifier.
    public var signatureCountsByKey: [String: Int] { issuedByKey.withLock { $0 } }

    /// Creates the service.
    /// - Parameters:
    ///   - apps: the apps served (with a policy, the policy's apps are added).
    ///   - keyRing: the keys.
    ///   - policy: the eligibility policy, or `nil`.
    ///   - policyRevision: its revision in the store (``StorePolicy``); 0 when it is not the store's.
    ///   - store: the customer store, or `nil`.
    ///   - introductoryOfferDecision: an override of the introductory-offer decision.
    ///   - notifications: the App Store data verifier and ingestor, or `nil`.
    ///   - appStoreClients: the App Store Server API client of each app (by bundle identifier), or none.
    public init(
        apps: [AppConfiguration],
        keyRing: KeyRing,
        policy: OfferPolicy? = nil,
        policyRevision: Int64 = 0,
        store: (any OfferStore)? = nil,
        introductoryOfferDecision: IntroductoryOfferDecision? = nil,
        notifications: NotificationIngestor? = nil,
        appStoreClients: [String: AppStoreServerAPIClient] = [:]
    ) {
        self.notifications = notifications
        self.appStoreClients = appStoreClients
        var all = Dictionary(apps.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
        for app in policy?.apps ?? [] {
            var configured = all[app.bundleIdentifier] ?? AppConfiguration(bundleIdentifier: app.bundleIdentifier)
            configured.issuerIdentifier = app.issuerIdentifier ?? configured.issuerIdentifier
            all[app.bundleIdentifier] = configured
        }
        self.apps = all
        self.keys = KeyRingHolder(keyRing)
        self.policyHolder = PolicyHolder(PolicyInForce(policy: policy, revision: policyRevision))
        self.store = store
        self.introductoryOfferDecision = introductoryOfferDecision
        self.signaturesIssued = Counter(label: "offer_signer_signatures_issued_total", dimensions: [("format", "legacy")])
        self.jwsIssued = Counter(label: "offer_signer_signatures_issued_total", dimensions: [("format", "jws")])
        self.selfCheckFailures = Counter(label: "offer_signer_signature_self_check_failures_total")
    }

    /// The app a request is for: the named one, or the only one.
    /// - Throws: ``OfferServiceError`` 404 `unknown_app`, or 400 when several apps are served and none is named.
    public func app(named bundleIdentifier: String?) throws(OfferServiceError) -> AppConfiguration {
        if let bundleIdentifier {
            guard let app = apps[bundleIdentifier] else {
                throw OfferServiceError(
                    .unknownApp,
                    """
                    This service does not sign for app '\(bundleIdentifier.prefix(PayloadField.maximumBundleIdentifierLength))'; check \
                    bundleIdentifier against the policy or OFFER_SIGNER_BUNDLE_ID.
                    """
                )
            }
            return app
        }
        guard apps.count == 1, let only = apps.values.first else {
            throw OfferServiceError.invalidRequest(field: "bundleIdentifier", "bundleIdentifier is required: this service signs for several apps.")
        }
        return only
    }

    /// The policy's product and the rule of one offer (no policy: no rule, which says yes).
    /// - Throws: ``OfferServiceError`` 404 `unknown_app` / `unknown_product` / `unknown_offer` when the policy does not
    ///   list them.
    func offerRule(
        app: AppConfiguration,
        productIdentifier: String,
        offerIdentifier: String
    ) throws(OfferServiceError) -> (product: OfferPolicy.Product?, rule: (any EligibilityRule)?) {
        guard let policy else { return (nil, nil) }
        switch policy.lookup(bundleIdentifier: app.bundleIdentifier, productIdentifier: productIdentifier, offerIdentifier: offerIdentifier) {
        case .unknownApp:
            throw OfferServiceError(.unknownApp, "The policy lists no app \(app.bundleIdentifier).")
        case .unknownProduct:
            throw Self.unknownProduct(productIdentifier, app: app)
        case .unknownOffer:
            throw OfferServiceError(
                .unknownOffer,
                """
                The policy lists no offer '\(offerIdentifier.prefix(PayloadField.maximumLength))' for \
                \(productIdentifier.prefix(PayloadField.maximumLength)).
                """
            )
        case .found(_, let product, let offer):
            return (product, offer.rule)
        }
    }

    /// The issuer ID JWS signatures of `app` need.
    /// - Throws: ``OfferServiceError`` 503 `issuer_not_configured` when the app has none: a JWS without the right
    ///   issuer would be refused by the App Store, so none is made.
    func issuerIdentifier(of app: AppConfiguration) throws(OfferServiceError) -> String {
        guard let issuer = app.issuerIdentifier, !issuer.isEmpty else {
            throw OfferServiceError(
                .issuerNotConfigured,
                """
                JWS signatures for \(app.bundleIdentifier) need the App Store Connect issuer ID: set OFFER_SIGNER_ISSUER_ID or issuerIdentifier \
                in the policy (Users and Access > Integrations > In-App Purchase). Legacy signatures work without it.
                """
            )
        }
        return issuer
    }

    static func unknownProduct(_ productIdentifier: String, app: AppConfiguration) -> OfferServiceError {
        OfferServiceError(
            .unknownProduct,
            "The policy lists no product '\(productIdentifier.prefix(PayloadField.maximumLength))' for \(app.bundleIdentifier)."
        )
    }

    /// What the rules see of a customer, read without a lock (for listings and explanations; signing reads
    /// through ``run(_:now:)``).
    func context(
        app: AppConfiguration,
        product: OfferPolicy.Product?,
        productIdentifier: String? = nil,
        offerIdentifier: String,
        applicationUsername: String,
        lookback: TimeInterval?,
        now: Date
    ) async throws -> EligibilityContext {
        let key = CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: applicationUsername)
        var facts = CustomerFacts(key: key)
        var issued: [IssuedSignature] = []
        if let store {
            (facts, issued) = try await storeCall {
                let facts = try await store.customerFacts(for: key) ?? facts
                guard let lookback, lookback > 0 else { return (facts, []) }
                return (
                    facts,
                    try await store.issuedSignatures(
                        matching: IssuedSignatureQuery(
                            bundleIdentifier: app.bundleIdentifier,
                            applicationUsername: key.applicationUsername,
                            since: Int64((now.timeIntervalSince1970 - lookback) * 1000),
                            limit: 10_000
                        )
                    )
                )
            }
        }
        return EligibilityContext(
            bundleIdentifier: app.bundleIdentifier,
            productIdentifier: product?.productIdentifier ?? productIdentifier ?? "",
            offerIdentifier: offerIdentifier,
            subscriptionGroupIdentifier: product?.subscriptionGroupIdentifier,
            facts: facts,
            issuedSignatures: issued,
            now: now
        )
    }

    /// Refuses with 403 `not_eligible` and the reasons, unless `decision` is a yes.
    func requireEligible(
        _ decision: EligibilityDecision,
        offer: @autoclosure () -> (product: String, offer: String) = (OfferMetrics.unlisted, OfferMetrics.unlisted)
    ) throws(OfferServiceError) {
        guard decision.isEligible else {
            PipelineMetrics.countRefusal(decision.reasons, offer: offer())
            throw OfferServiceError(.notEligible, "This customer may not have this offer; see reasons.", reasons: decision.reasons)
        }
    }

    /// Counts an issued signature, by key and by format.
    func countIssued(_ record: IssuedSignature) {
        issuedByKey.withLock { $0[record.keyIdentifier, default: 0] += 1 }
        (record.format == "legacy" ? signaturesIssued : jwsIssued).increment()
        OfferMetrics.countSignature(record, policy: policy)
    }
}
