import Foundation
import HTTPTypes
import Logging
import Metrics
import OfferSigning

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
    private let signaturesIssued: Counter
    private let selfCheckFailures: Counter

    /// Creates the service.
    public init(apps: [AppConfiguration], keyRing: KeyRing) {
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
            return bundle
        } catch {
            if error.code == .selfCheckFailed { selfCheckFailures.increment() }
            throw error
        }
    }

    /// Verifies a legacy bundle with every key the service knows, retired ones included.
    public func verifyLegacy(_ bundle: SignedLegacyOffer, now: Date = Date()) -> LegacyOfferVerification {
        LegacyOfferVerifier.verify(bundle, keyRing: keys.current, now: now)
    }
}
