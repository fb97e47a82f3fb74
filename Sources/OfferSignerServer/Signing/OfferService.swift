import Foundation
import HTTPTypes
import Logging
import Metrics
import OfferSigning
import Synchronization

/// A sign request as the API receives it (DESIGN.md §2.1).
public struct SignOfferRequest: Sendable, Codable {
    /// Optional when one app is configured.
    public var bundleIdentifier: String?
    /// The subscription's product identifier.
    public var productIdentifier: String
    /// The promotional offer identifier.
    public var offerIdentifier: String
    /// The customer: hashed account id or appAccountToken.
    public var applicationUsername: String
    /// `legacy` (default) or `jws`.
    public var format: OfferSignatureFormat?
    /// For JWS: the customer's transaction.
    public var transactionId: String?
    /// A StoreKit 2 signed transaction proving a past purchase.
    public var signedTransaction: String?

    /// Creates a request.
    public init(bundleIdentifier: String? = nil, productIdentifier: String, offerIdentifier: String, applicationUsername: String, format: OfferSignatureFormat? = nil, transactionId: String? = nil, signedTransaction: String? = nil) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.applicationUsername = applicationUsername
        self.format = format
        self.transactionId = transactionId
        self.signedTransaction = signedTransaction
    }
}

/// The signature formats of `POST /v1/offers/sign`.
public enum OfferSignatureFormat: String, Sendable, Codable {
    /// The legacy bundle (StoreKit 1 `SKPaymentDiscount`, StoreKit 2 `promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`).
    case legacy
    /// A compact JWS (StoreKit 2 promotional offer V2).
    case jws
}

/// What the HTTP routes call: resolves the app and the key, signs, self-verifies, counts. No HTTP types here,
/// so the CLI and tests use it directly.
public final class OfferService: Sendable {
    /// The apps served, by bundle identifier.
    public let apps: [String: AppConfiguration]
    /// The current keys.
    public let keys: KeyRingHolder
    /// Decides `allowIntroductoryOffer` for (bundle identifier, product identifier, lower-cased
    /// applicationUsername).
    public let introductoryOfferDecision: IntroductoryOfferDecision
    private let signaturesIssued: Counter
    private let jwsIssued: Counter
    private let selfCheckFailures: Counter
    private let issuedByKey = Mutex<[String: Int]>([:])

    /// Signatures made by this process, by key identifier.
    public var signatureCountsByKey: [String: Int] { issuedByKey.withLock { $0 } }

    private func countIssued(by keyIdentifier: String) {
        issuedByKey.withLock { $0[keyIdentifier, default: 0] += 1 }
    }

    /// Creates the service.
    /// - Parameters:
    ///   - apps: the apps served.
    ///   - keyRing: the keys.
    ///   - introductoryOfferDecision: who may have introductory offers; by default everyone
    ///     (``IntroductoryOfferDecisions/allowWithoutPolicy``).
    public init(apps: [AppConfiguration], keyRing: KeyRing, introductoryOfferDecision: @escaping IntroductoryOfferDecision = IntroductoryOfferDecisions.allowWithoutPolicy) {
        self.introductoryOfferDecision = introductoryOfferDecision
        self.jwsIssued = Counter(label: "offer_signer_signatures_issued_total", dimensions: [("format", "jws")])
        self.apps = Dictionary(apps.map { ($0.bundleIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
        self.keys = KeyRingHolder(keyRing)
        self.signaturesIssued = Counter(label: "offer_signer_signatures_issued_total", dimensions: [("format", "legacy")])
        self.selfCheckFailures = Counter(label: "offer_signer_signature_self_check_failures_total")
    }

    /// The app a request is for: the named one, or the only one.
    /// - Throws: ``APIError`` 404 `unknown_app`, or 400 when several apps are served and none is named.
    public func app(named bundleIdentifier: String?) throws(APIError) -> AppConfiguration {
        if let bundleIdentifier {
            guard let app = apps[bundleIdentifier] else {
                throw APIError(status: .notFound, code: "unknown_app", message: "This service does not sign for app '\(bundleIdentifier.prefix(155))'; check bundleIdentifier against OFFER_SIGNER_BUNDLE_ID.")
            }
            return app
        }
        guard apps.count == 1, let only = apps.values.first else {
            throw APIError.invalidRequest(field: "bundleIdentifier", "bundleIdentifier is required: this service signs for several apps.")
        }
        return only
    }

    /// Signs a legacy promotional offer with the app's active key and self-verifies it.
    /// - Throws: ``APIError`` for an unknown app; ``OfferSigningError`` for invalid fields, no signing key or a
    ///   failed self-check (counted in `offer_signer_signature_self_check_failures_total`).
    public func signLegacy(_ request: SignOfferRequest) throws -> SignedLegacyOffer {
        let app = try app(named: request.bundleIdentifier)
        let key = try keys.current.activeKey(forApp: app.bundleIdentifier)
        let offer = PromotionalOffer(
            bundleIdentifier: app.bundleIdentifier, productIdentifier: request.productIdentifier,
            offerIdentifier: request.offerIdentifier, applicationUsername: request.applicationUsername)
        do {
            let bundle = try OfferSigner.signLegacy(offer, with: key)
            signaturesIssued.increment()
            countIssued(by: key.keyIdentifier)
            return bundle
        } catch {
            if error.code == .selfCheckFailed { selfCheckFailures.increment() }
            throw error
        }
    }

    /// The issuer ID JWS signatures of `app` need.
    /// - Throws: ``APIError`` 503 `issuer_not_configured` when the app has none: a JWS without the right
    ///   issuer would be refused by the App Store, so none is made.
    func issuerIdentifier(of app: AppConfiguration) throws(APIError) -> String {
        guard let issuer = app.issuerIdentifier, !issuer.isEmpty else {
            throw APIError(
                status: .serviceUnavailable, code: "issuer_not_configured",
                message: "JWS signatures for \(app.bundleIdentifier) need the App Store Connect issuer ID: set OFFER_SIGNER_ISSUER_ID (Users and Access > Integrations > In-App Purchase). Legacy signatures work without it.")
        }
        return issuer
    }

    /// Signs a StoreKit 2 promotional offer V2 JWS with the app's active key and self-verifies it.
    /// - Throws: ``APIError`` for an unknown app or a missing issuer ID; ``OfferSigningError`` as ``signLegacy(_:)``.
    public func signJWS(_ request: SignOfferRequest) async throws -> SignedJWSOfferResponse {
        let app = try app(named: request.bundleIdentifier)
        try PayloadField.validate(request.applicationUsername, named: "applicationUsername", maximumLength: 255)
        let issuer = try issuerIdentifier(of: app)
        let key = try keys.current.activeKey(forApp: app.bundleIdentifier)
        do {
            let signed = try await JWSOfferSigner.signPromotionalOffer(
                bundleIdentifier: app.bundleIdentifier, productIdentifier: request.productIdentifier,
                offerIdentifier: request.offerIdentifier, transactionId: request.transactionId,
                issuerIdentifier: issuer, key: key)
            jwsIssued.increment()
            countIssued(by: key.keyIdentifier)
            return SignedJWSOfferResponse(
                bundleIdentifier: app.bundleIdentifier, productIdentifier: signed.claims.productId,
                offerIdentifier: signed.claims.offerIdentifier, keyIdentifier: signed.keyIdentifier,
                nonce: signed.claims.nonce, signature: signed.token)
        } catch {
            if error.code == .selfCheckFailed { selfCheckFailures.increment() }
            throw error
        }
    }

    /// Signs an introductory-offer eligibility JWS; `allowIntroductoryOffer` comes from
    /// ``introductoryOfferDecision``.
    public func signIntroductoryOfferEligibility(_ request: IntroductoryEligibilityRequest) async throws -> IntroductoryEligibilityResponse {
        let app = try app(named: request.bundleIdentifier)
        try PayloadField.validate(request.applicationUsername, named: "applicationUsername", maximumLength: 255)
        try PayloadField.validate(request.productIdentifier, named: "productIdentifier", maximumLength: 255)
        let issuer = try issuerIdentifier(of: app)
        let key = try keys.current.activeKey(forApp: app.bundleIdentifier)
        let decision = try await introductoryOfferDecision(app.bundleIdentifier, request.productIdentifier, request.applicationUsername.lowercased())
        do {
            let signed = try await JWSOfferSigner.signIntroductoryOfferEligibility(
                bundleIdentifier: app.bundleIdentifier, productIdentifier: request.productIdentifier,
                allowIntroductoryOffer: decision.allow, transactionId: request.transactionId,
                issuerIdentifier: issuer, key: key)
            jwsIssued.increment()
            countIssued(by: key.keyIdentifier)
            return IntroductoryEligibilityResponse(
                bundleIdentifier: app.bundleIdentifier, productIdentifier: signed.claims.productId,
                transactionId: signed.claims.transactionId, allowIntroductoryOffer: signed.claims.allowIntroductoryOffer,
                reason: decision.reason, keyIdentifier: signed.keyIdentifier, nonce: signed.claims.nonce, signature: signed.token)
        } catch {
            if error.code == .selfCheckFailed { selfCheckFailures.increment() }
            throw error
        }
    }

    /// Verifies an offer JWS with every key the service knows.
    public func verifyJWS(_ token: String, now: Date = Date()) async -> JWSOfferVerification {
        await JWSOfferVerifier.verify(token, keyRing: keys.current, now: now)
    }

    /// Verifies a legacy bundle with every key the service knows, retired ones included.
    public func verifyLegacy(_ bundle: SignedLegacyOffer, now: Date = Date()) -> LegacyOfferVerification {
        LegacyOfferVerifier.verify(bundle, keyRing: keys.current, now: now)
    }
}
