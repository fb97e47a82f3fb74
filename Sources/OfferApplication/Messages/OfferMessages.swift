import Foundation
import OfferEligibility
import OfferSigning

// The requests and results of the offer flows: the bodies of the app-facing routes (OfferRoutes in the server).

/// A sign request as the API receives it (docs/design.md §2.1).
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

    private enum CodingKeys: String, CodingKey {
        case bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, format, transactionId, signedTransaction
    }

    /// Decodes a request; `applicationUsername` may be left out when a login JWT names the customer.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleIdentifier = try container.decodeIfPresent(String.self, forKey: .bundleIdentifier)
        productIdentifier = try container.decode(String.self, forKey: .productIdentifier)
        offerIdentifier = try container.decode(String.self, forKey: .offerIdentifier)
        applicationUsername = try container.decodeIfPresent(String.self, forKey: .applicationUsername) ?? ""
        if let text = try container.decodeIfPresent(String.self, forKey: .format) {
            guard let parsed = OfferSignatureFormat(rawValue: text) else {
                throw OfferServiceError.invalidRequest(
                    field: "format",
                    "format must be \"legacy\" (the default) or \"jws\", not \"\(text.prefix(20))\"."
                )
            }
            format = parsed
        } else {
            format = nil
        }
        transactionId = try container.decodeIfPresent(String.self, forKey: .transactionId)
        signedTransaction = try container.decodeIfPresent(String.self, forKey: .signedTransaction)
    }

    /// Creates a request.
    public init(
        bundleIdentifier: String? = nil,
        productIdentifier: String,
        offerIdentifier: String,
        applicationUsername: String,
        format: OfferSignatureFormat? = nil,
        transactionId: String? = nil,
        signedTransaction: String? = nil
    ) {
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

/// One offer's decision, as `POST /v1/offers/eligibility` lists it.
public struct OfferEligibilityEntry: Sendable, Codable, Hashable {
    public var productIdentifier: String
    public var offerIdentifier: String
    public var eligible: Bool
    public var reasons: [EligibilityReason]
    /// The running experiment that decides this offer's slot, and the customer's variant; absent otherwise.
    public var experiment: ExperimentMembership?
}

/// The 200 answer of `POST /v1/offers/sign` with `"format": "jws"`.
public struct SignedJWSOfferResponse: Sendable, Codable {
    /// Always `"jws"`.
    public var format = "jws"
    public var bundleIdentifier: String
    public var productIdentifier: String
    public var offerIdentifier: String
    public var keyIdentifier: String
    public var nonce: String
    /// The compact JWS, for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    public var signature: String

    public init(bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, keyIdentifier: String, nonce: String, signature: String)
    {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.signature = signature
    }
}

/// The body of `POST /v1/offers/introductory-eligibility`.
public struct IntroductoryEligibilityRequest: Sendable, Codable {
    public var bundleIdentifier: String?
    public var productIdentifier: String
    /// A transaction of the customer's; the decision is made for the customer who owns it.
    public var transactionId: String
    /// The customer (may be left out when a login JWT names it).
    public var applicationUsername: String
    /// Optional: StoreKit 2's `jwsRepresentation` of the customer's transaction, verified and recorded first,
    /// which also links `transactionId` to this customer.
    public var signedTransaction: String?

    private enum CodingKeys: String, CodingKey {
        case bundleIdentifier, productIdentifier, transactionId, applicationUsername, signedTransaction
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleIdentifier = try container.decodeIfPresent(String.self, forKey: .bundleIdentifier)
        productIdentifier = try container.decode(String.self, forKey: .productIdentifier)
        transactionId = try container.decode(String.self, forKey: .transactionId)
        applicationUsername = try container.decodeIfPresent(String.self, forKey: .applicationUsername) ?? ""
        signedTransaction = try container.decodeIfPresent(String.self, forKey: .signedTransaction)
    }

    public init(
        bundleIdentifier: String? = nil,
        productIdentifier: String,
        transactionId: String,
        applicationUsername: String,
        signedTransaction: String? = nil
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.transactionId = transactionId
        self.applicationUsername = applicationUsername
        self.signedTransaction = signedTransaction
    }
}

/// The 200 answer of `POST /v1/offers/introductory-eligibility`.
public struct IntroductoryEligibilityResponse: Sendable, Codable {
    /// Always `"jws"`.
    public var format = "jws"
    public var bundleIdentifier: String
    public var productIdentifier: String
    public var transactionId: String
    /// What the JWS tells the App Store.
    public var allowIntroductoryOffer: Bool
    /// Why, for humans.
    public var reason: String
    public var keyIdentifier: String
    public var nonce: String
    /// The compact JWS (audience `introductory-offer-eligibility`).
    public var signature: String
}

/// A decision on introductory-offer eligibility, with its reason.
public struct IntroductoryOfferVerdict: Sendable {
    /// Whether the customer may have the product's introductory offer.
    public var allow: Bool
    /// Why, for humans.
    public var reason: String

    public init(allow: Bool, reason: String) {
        self.allow = allow
        self.reason = reason
    }
}

/// Decides introductory-offer eligibility for (bundle identifier, product identifier, lower-cased
/// applicationUsername).
public typealias IntroductoryOfferDecision = @Sendable (String, String, String) async throws -> IntroductoryOfferVerdict

/// Built-in introductory-offer decisions.
public enum IntroductoryOfferDecisions {
    /// Without an introductory-offer policy the service says yes and leaves the App Store's own rule (one
    /// introductory offer per subscription group) to the App Store.
    public static let allowWithoutPolicy: IntroductoryOfferDecision = { _, _, _ in
        IntroductoryOfferVerdict(
            allow: true,
            reason:
                """
                No introductory-offer policy is configured; the App Store still applies its own rule (one introductory offer per subscription \
                group).
                """
        )
    }
}
