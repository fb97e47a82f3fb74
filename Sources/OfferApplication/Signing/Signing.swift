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

/// Signing: a legacy promotional offer, a promotional offer JWS, an introductory-offer eligibility JWS, each a flow
/// through the one ``SigningPipeline`` (the app, the policy's rule for the customer, the active key, the self-check,
/// the signature recorded before the answer). The use case `POST /v1/offers/sign`, `/v1/offers/sign-jws` and
/// `/v1/introductory-offer-eligibility/sign` run, on the event loop's fast path and in the router alike.
public struct Signing: Sendable {
    /// The pipeline every flow runs through.
    let pipeline: SigningPipeline

    /// Signing through `pipeline`.
    public init(pipeline: SigningPipeline) {
        self.pipeline = pipeline
    }

    /// The pipeline's flow for an offer of the policy: the customer, the offer's rule, refusing a no.
    func offerFlow<Output: Sendable>(
        app: AppConfiguration,
        productIdentifier: String,
        offerIdentifier: String,
        applicationUsername: String,
        transactionId: String?,
        channel: DecisionChannel,
        sign: FlowSigning<Output>
    ) throws(OfferServiceError) -> SigningFlow<Output> {
        let (product, rule) = try pipeline.offerRule(app: app, productIdentifier: productIdentifier, offerIdentifier: offerIdentifier)
        let customer = CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: applicationUsername)
        return SigningFlow(
            app: app,
            customer: customer,
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            channel: channel,
            subscriptionGroupIdentifier: product?.subscriptionGroupIdentifier,
            rule: rule,
            refusesWhenNotEligible: true,
            sign: sign,
            appStoreLookup: transactionId.map { AppStoreLookup(transactionId: $0, owner: .customer(customer), field: "transactionId") }
        )
    }

    /// Signs a legacy promotional offer with the app's active key, after the eligibility policy, and
    /// self-verifies it.
    /// - Throws: ``OfferServiceError`` (unknown app/product/offer, not eligible, store unavailable);
    ///   ``OfferSigningError`` for invalid fields, no signing key or a failed self-check (counted in
    ///   `offer_signer_signature_self_check_failures_total`).
    public func signLegacy(_ request: SignOfferRequest) async throws -> SignedLegacyOffer {
        try await signPrepared(prepareLegacy(request))
    }

    /// `POST /v1/offers/sign`'s one step that does not suspend, for the event-loop path: a legacy request that needs
    /// nothing to wait for (no `signedTransaction`, a flow ``immediateRun(_:now:)`` takes) is signed at once
    /// (``SigningStep/signed(_:)``, its record still to commit); one whose rule reads issued offers is decided and
    /// signed at once under its customer's lock when the store reads at once and the lock is free
    /// (``SigningStep/signedHolding(_:)``: ``SigningPipeline/runAtOnceUnderCustomerLock(_:now:)``); any other — a
    /// JWS too — is validated, its app, offer and rule resolved, and handed on as a ``PreparedSigning`` that
    /// ``sign(_:)`` runs without checking anything again. Throws what signing throws before it signs (unknown app,
    /// product or offer; invalid fields; a JWS for an app without an issuer ID) without any effect, and a refusal
    /// decided at once (`not_eligible`, logged as every decision is).
    package func prepareSigning(_ request: SignOfferRequest) throws -> SigningStep {
        let prepared = try prepareForPipeline(request)
        if case .legacy(let legacy) = prepared.format, legacy.signedTransaction == nil {
            if let signing = try pipeline.immediateRun(legacy.flow) { return .signed(signing) }
            if let held = try pipeline.runAtOnceUnderCustomerLock(legacy.flow) { return .signedHolding(held) }
        }
        return .pipeline(prepared)
    }

    /// ``prepareSigning(_:)`` for a caller that runs every request through the pipeline (the router: its pipeline
    /// takes a flow's immediate steps itself, or its traced ones when spans are on).
    package func prepareForPipeline(_ request: SignOfferRequest) throws -> PreparedSigning {
        switch request.format ?? .legacy {
        case .jws: PreparedSigning(format: .jws(try prepareJWS(request)))
        case .legacy: PreparedSigning(format: .legacy(try prepareLegacy(request)))
        }
    }

    /// Runs a request ``prepareSigning(_:)`` handed on: the pipeline that waits (stored facts, the App Store, a
    /// signed transaction, a JWS).
    package func sign(_ prepared: PreparedSigning) async throws -> SignAnswer {
        switch prepared.format {
        case .legacy(let legacy): .legacy(try await signPrepared(legacy))
        case .jws(let jws): .jws(try await signPrepared(jws, refusingAnotherCustomersTransaction: true))
        }
    }

    /// A legacy request validated: its app and offer, and its flow (the offer's rule resolved).
    func prepareLegacy(_ request: SignOfferRequest) throws -> PreparedOffer<SignedLegacyOffer> {
        let (app, offer) = try legacyOffer(request)
        return PreparedOffer(
            flow: try legacyFlow(offer, app: app, transactionId: request.transactionId),
            transactionId: request.transactionId,
            signedTransaction: request.signedTransaction
        )
    }

    /// A JWS request validated: its app, fields and issuer ID, and its flow (the offer's rule resolved).
    func prepareJWS(_ request: SignOfferRequest) throws -> PreparedOffer<SignedJWSOfferResponse> {
        let app = try pipeline.app(named: request.bundleIdentifier)
        try CustomerIdentifier.validate(request.applicationUsername)
        try PayloadField.validate(request.productIdentifier, named: "productIdentifier")
        try PayloadField.validate(request.offerIdentifier, named: "offerIdentifier")
        if let transactionId = request.transactionId { try JWSOfferSigner.validateTransactionIdentifier(transactionId) }
        let issuer = try pipeline.issuerIdentifier(of: app)
        let customer = request.applicationUsername.lowercased()
        let flow = try offerFlow(
            app: app,
            productIdentifier: request.productIdentifier,
            offerIdentifier: request.offerIdentifier,
            applicationUsername: request.applicationUsername,
            transactionId: request.transactionId,
            channel: .jws,
            sign: .suspending { key, _, _ in
                let signed = try await JWSOfferSigner.signPromotionalOffer(
                    bundleIdentifier: app.bundleIdentifier,
                    productIdentifier: request.productIdentifier,
                    offerIdentifier: request.offerIdentifier,
                    transactionId: request.transactionId,
                    issuerIdentifier: issuer,
                    key: key
                )
                return SignedOutput(
                    output: SignedJWSOfferResponse(
                        bundleIdentifier: app.bundleIdentifier,
                        productIdentifier: signed.claims.productIdentifier,
                        offerIdentifier: signed.claims.offerIdentifier,
                        keyIdentifier: signed.keyIdentifier,
                        nonce: signed.claims.nonce,
                        signature: signed.token
                    ),
                    record: IssuedSignature(signed, bundleIdentifier: app.bundleIdentifier, customer: customer)
                )
            }
        )
        return PreparedOffer(flow: flow, transactionId: request.transactionId, signedTransaction: request.signedTransaction)
    }

    /// Signs a validated offer request through the pipeline: its signed transaction, if any, verified and recorded
    /// first (the flow's App Store lookup may then be the transaction's); for a JWS, whose `transactionId` is
    /// signed into it, never another customer's transaction.
    func signPrepared<Output: Sendable>(
        _ prepared: PreparedOffer<Output>,
        refusingAnotherCustomersTransaction: Bool = false
    ) async throws -> Output {
        var flow = prepared.flow
        let presented = try await ingestSignedTransaction(
            prepared.signedTransaction,
            app: flow.app,
            applicationUsername: flow.customer.applicationUsername
        )?
        .originalTransactionId
        if refusingAnotherCustomersTransaction, let transactionId = prepared.transactionId {
            try await pipeline.refuseAnotherCustomersTransaction(
                AppStoreLookup(transactionId: transactionId, owner: .customer(flow.customer), field: "transactionId"),
                app: flow.app
            )
        }
        if flow.appStoreLookup == nil, let presented {
            flow.appStoreLookup = AppStoreLookup(transactionId: presented, owner: .customer(flow.customer), field: "transactionId")
        }
        return try await pipeline.run(flow)
    }

    /// The app a legacy request names, and the offer it asks for, validated.
    func legacyOffer(_ request: SignOfferRequest) throws -> (AppConfiguration, PromotionalOffer) {
        let app = try pipeline.app(named: request.bundleIdentifier)
        let offer = PromotionalOffer(
            bundleIdentifier: app.bundleIdentifier,
            productIdentifier: request.productIdentifier,
            offerIdentifier: request.offerIdentifier,
            applicationUsername: request.applicationUsername
        )
        try offer.validate()
        try CustomerIdentifier.refuseInternal(offer.applicationUsername)
        return (app, offer)
    }

    /// The legacy format's flow for a validated offer, signed without suspending.
    func legacyFlow(_ offer: PromotionalOffer, app: AppConfiguration, transactionId: String?) throws -> SigningFlow<SignedLegacyOffer> {
        try offerFlow(
            app: app,
            productIdentifier: offer.productIdentifier,
            offerIdentifier: offer.offerIdentifier,
            applicationUsername: offer.applicationUsername,
            transactionId: transactionId,
            channel: .legacy,
            sign: .immediate { key, _, _ in
                let bundle = try OfferSigner.signLegacy(offer, with: key)
                return SignedOutput(output: bundle, record: IssuedSignature(bundle, customer: bundle.applicationUsername))
            }
        )
    }

    /// Verifies and records a StoreKit 2 signed transaction for a customer (nothing when `nil`).
    /// - Returns: the verified transaction.
    @discardableResult
    func ingestSignedTransaction(
        _ signedTransaction: String?,
        app: AppConfiguration,
        applicationUsername: String
    ) async throws(OfferServiceError) -> JWSTransactionDecodedPayload? {
        guard let signedTransaction else { return nil }
        guard let notifications = pipeline.notifications else {
            // Configuration, not an outage: 422, which no client retries (a 503 with Retry-After was retried forever).
            throw OfferServiceError(
                .appStoreDataNotConfigured,
                """
                signedTransaction cannot be used here: this service has no customer store or no app configured to receive App Store data. Send \
                the request without signedTransaction, or ask the operator to configure OFFER_SIGNER_DATABASE_URL, OFFER_SIGNER_ENVIRONMENTS \
                and the app's appAppleId.
                """,
                field: "signedTransaction"
            )
        }
        guard signedTransaction.utf8.count <= 16 * 1024 else {
            throw OfferServiceError.invalidRequest(field: "signedTransaction", "signedTransaction is longer than 16 KiB.")
        }
        return try await notifications.ingest(
            signedTransaction: signedTransaction,
            for: CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: applicationUsername)
        )
    }

    /// Signs a StoreKit 2 promotional offer V2 JWS with the app's active key, after the eligibility policy,
    /// and self-verifies it.
    /// - Throws: as ``signLegacy(_:)``, and ``OfferServiceError`` 503 `issuer_not_configured`.
    public func signJWS(_ request: SignOfferRequest) async throws -> SignedJWSOfferResponse {
        try await signPrepared(prepareJWS(request), refusingAnotherCustomersTransaction: true)
    }

    /// The decision is made for the customer who owns `transactionId`: the request's customer must be the one
    /// verified App Store data (a notification, or a signed transaction — the request's own `signedTransaction`
    /// is verified and recorded first) links that original transaction to; a later transaction (a renewal) is
    /// known by its subscription when the request's `signedTransaction` is that transaction. An unknown
    /// transaction is refused, never decided on empty facts.
    /// - Throws: ``OfferServiceError`` `unknown_transaction`, `customer_mismatch`, `store_unavailable`.
    func requireOwnership(
        of transactionId: String,
        by customer: CustomerKey,
        signedTransaction: String?,
        app: AppConfiguration
    ) async throws(OfferServiceError) {
        guard let store = pipeline.store else {
            throw OfferServiceError(
                .storeUnavailable,
                "Introductory-offer eligibility under a policy is decided from the customer store; configure OFFER_SIGNER_DATABASE_URL."
            )
        }
        guard !transactionId.isEmpty, transactionId.count <= 64, transactionId.allSatisfy(\.isNumber) else {
            throw OfferServiceError.invalidRequest(field: "transactionId", "transactionId must be a transaction identifier: 1 to 64 decimal digits.")
        }
        let presented = try await ingestSignedTransaction(signedTransaction, app: app, applicationUsername: customer.applicationUsername)
        // A renewal's (or any later) transaction, presented with its signed transaction: its subscription's owner.
        let original = presented.flatMap { $0.transactionId == transactionId ? $0.originalTransactionId : nil } ?? transactionId
        let owners = try await storeCall { try await store.customers(withOriginalTransactionId: original) }.filter {
            $0.bundleIdentifier == app.bundleIdentifier
        }
        // A transaction the store does not know: the App Store's answer, attached only if it can be this
        // customer's (appAccountToken, or a subscription nobody has claimed), links it.
        if owners.isEmpty,
            case .stored(let owner, _) = try await pipeline.fetchMissingFacts(
                AppStoreLookup(transactionId: transactionId, owner: .customer(customer), field: "transactionId", evenWhenFactsKnown: true),
                app: app,
                subscriptionGroupIdentifier: nil
            ), owner == customer
        {
            return
        }
        guard !owners.isEmpty else {
            throw OfferServiceError(
                .unknownTransaction,
                """
                No verified App Store data links transaction \(transactionId) to a customer of \(app.bundleIdentifier). Send the customer's \
                signedTransaction (StoreKit 2 jwsRepresentation) with the request, or wait for the App Store's notification.
                """,
                field: "transactionId"
            )
        }
        guard owners.contains(customer) else {
            throw OfferServiceError(
                .customerMismatch,
                """
                Transaction \(transactionId) belongs to another customer; introductory-offer eligibility is decided only for the customer who \
                owns the transaction.
                """,
                field: "transactionId"
            )
        }
    }

    /// Signs an introductory-offer eligibility JWS; `allowIntroductoryOffer` comes from the override if any,
    /// else the product's introductory-offer policy applied to the customer's facts, else yes.
    public func signIntroductoryOfferEligibility(_ request: IntroductoryEligibilityRequest) async throws -> IntroductoryEligibilityResponse {
        let app = try pipeline.app(named: request.bundleIdentifier)
        try CustomerIdentifier.validate(request.applicationUsername)
        try PayloadField.validate(request.productIdentifier, named: "productIdentifier")
        let issuer = try pipeline.issuerIdentifier(of: app)
        let customer = CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: request.applicationUsername)
        if pipeline.introductoryOfferDecision == nil, pipeline.policy != nil {
            try await requireOwnership(of: request.transactionId, by: customer, signedTransaction: request.signedTransaction, app: app)
        }
        var product: OfferPolicy.Product?
        var rule: (any EligibilityRule)?
        var fixedVerdict: IntroductoryOfferVerdict?
        if let introductoryOfferDecision = pipeline.introductoryOfferDecision {
            fixedVerdict = try await introductoryOfferDecision(app.bundleIdentifier, request.productIdentifier, customer.applicationUsername)
        } else if let policy = pipeline.policy {
            guard let found = policy.app(app.bundleIdentifier)?.product(request.productIdentifier) else {
                throw SigningPipeline.unknownProduct(request.productIdentifier, app: app)
            }
            product = found
            rule = found.introductoryOffer
            if rule == nil {
                fixedVerdict = IntroductoryOfferVerdict(
                    allow: true,
                    reason: "The product has no introductory-offer policy; the App Store applies its own rule."
                )
            }
        } else {
            fixedVerdict = try await IntroductoryOfferDecisions.allowWithoutPolicy(
                app.bundleIdentifier,
                request.productIdentifier,
                customer.applicationUsername
            )
        }
        let verdictGiven = fixedVerdict
        let flow = SigningFlow(
            app: app,
            customer: customer,
            productIdentifier: request.productIdentifier,
            offerIdentifier: "",
            channel: .introductory,
            subscriptionGroupIdentifier: product?.subscriptionGroupIdentifier,
            rule: rule,
            refusesWhenNotEligible: false,
            sign: .suspending { key, decision, _ in
                let verdict =
                    verdictGiven
                    ?? IntroductoryOfferVerdict(
                        allow: decision.isEligible,
                        reason: decision.isEligible
                            ? "The product's introductory-offer policy allows it." : decision.reasons.map(\.message).joined(separator: " ")
                    )
                let signed = try await JWSOfferSigner.signIntroductoryOfferEligibility(
                    bundleIdentifier: app.bundleIdentifier,
                    productIdentifier: request.productIdentifier,
                    allowIntroductoryOffer: verdict.allow,
                    transactionId: request.transactionId,
                    issuerIdentifier: issuer,
                    key: key
                )
                return SignedOutput(
                    output: IntroductoryEligibilityResponse(
                        bundleIdentifier: app.bundleIdentifier,
                        productIdentifier: signed.claims.productIdentifier,
                        transactionId: signed.claims.transactionId,
                        allowIntroductoryOffer: signed.claims.allowIntroductoryOffer,
                        reason: verdict.reason,
                        keyIdentifier: signed.keyIdentifier,
                        nonce: signed.claims.nonce,
                        signature: signed.token
                    ),
                    record: IssuedSignature(
                        nonce: signed.claims.nonce,
                        keyIdentifier: signed.keyIdentifier,
                        bundleIdentifier: app.bundleIdentifier,
                        productIdentifier: signed.claims.productIdentifier,
                        offerIdentifier: "",
                        applicationUsername: customer.applicationUsername,
                        timestamp: signed.claims.iat * 1000,
                        format: "introductory-eligibility"
                    )
                )
            }
        )
        return try await pipeline.run(flow)
    }
}

/// What ``Signing/prepareSigning(_:)`` makes of a `POST /v1/offers/sign` request.
package enum SigningStep {
    /// Signed without suspending: the answer and its record, which the caller commits
    /// (``Signing/commit(_:startWhenReady:completion:)``) before answering.
    case signed(() throws -> SignedOutput<SignedLegacyOffer>)
    /// Decided and signed at once under the customer's lock, which stays held until the caller commits the record
    /// (``Signing/commit(_:startWhenReady:completion:)``) before answering.
    case signedHolding(CustomerLockHeld<SignedLegacyOffer>)
    /// Validated, for the pipeline that waits (``Signing/sign(_:)``).
    case pipeline(PreparedSigning)
}

/// A `POST /v1/offers/sign` request validated once (``Signing/prepareSigning(_:)``), for
/// ``Signing/sign(_:)``.
package struct PreparedSigning: Sendable {
    /// The request in the format it asks for.
    enum Format: Sendable {
        case legacy(PreparedOffer<SignedLegacyOffer>)
        case jws(PreparedOffer<SignedJWSOfferResponse>)
    }

    var format: Format
}

/// An offer request validated: its flow (the app, the offer's product and rule resolved, the signer), and what the
/// pipeline does before it runs the flow: a signed transaction to verify and record, a transaction identifier.
struct PreparedOffer<Output: Sendable>: Sendable {
    var flow: SigningFlow<Output>
    var transactionId: String?
    var signedTransaction: String?
}

/// The answer of `POST /v1/offers/sign`, in the format asked for.
package enum SignAnswer: Sendable {
    case legacy(SignedLegacyOffer)
    case jws(SignedJWSOfferResponse)
}

extension Signing {
    /// Records the signature a ``SigningStep/signed(_:)`` step made (see ``SigningPipeline/commit(_:startWhenReady:completion:)``):
    /// durable before the caller answers.
    package func commit(
        _ record: IssuedSignature?,
        startWhenReady: StartWhenReady? = nil,
        completion: @escaping @Sendable (Result<Void, OfferServiceError>) -> Void
    ) {
        pipeline.commit(record, startWhenReady: startWhenReady, completion: completion)
    }

    /// Records the signature of a ``SigningStep/signedHolding(_:)`` step and releases its customer's lock once it is
    /// durable (``SigningPipeline/commit(_:startWhenReady:completion:)``).
    package func commit(
        _ held: CustomerLockHeld<SignedLegacyOffer>,
        startWhenReady: StartWhenReady? = nil,
        completion: @escaping @Sendable (Result<Void, OfferServiceError>) -> Void
    ) {
        pipeline.commit(held, startWhenReady: startWhenReady, completion: completion)
    }

    /// The apps signed for, by bundle identifier.
    public var apps: [String: AppConfiguration] { pipeline.apps }
    /// The signing keys in use.
    public var keys: KeyRingHolder { pipeline.keys }
    /// The policy in force, replaced whole when a policy is applied to the fleet; `nil` signs every well-formed request.
    public var policyHolder: PolicyHolder { pipeline.policyHolder }
    /// The offer catalogue and eligibility policy in force; `nil` signs every well-formed request.
    public var policy: OfferPolicy? { pipeline.policy }
    /// Signatures made by this process, by key identifier.
    public var signatureCountsByKey: [String: Int] { pipeline.signatureCountsByKey }
    /// Whether signed App Store data (a `signedTransaction`, notifications) can be verified and recorded here.
    public var takesAppStoreData: Bool { pipeline.notifications != nil }
}

extension Signing {
    /// The app a request is for: the named one, or the only one.
    /// - Throws: ``OfferServiceError`` 404 `unknown_app`, or 400 when several apps are served and none is named.
    public func app(named bundleIdentifier: String?) throws(OfferServiceError) -> AppConfiguration {
        try pipeline.app(named: bundleIdentifier)
    }
}
