import Hummingbird
import OfferSigning

/// The 200 answer of `POST /v1/offers/sign` with `"format": "jws"`.
public struct SignedJWSOfferResponse: Sendable, Codable, ResponseEncodable {
    /// Always `"jws"`.
    public var format = "jws"
    public var bundleIdentifier: String
    public var productIdentifier: String
    public var offerIdentifier: String
    public var keyIdentifier: String
    public var nonce: String
    /// The compact JWS, for `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    public var signature: String

    public init(bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, keyIdentifier: String, nonce: String, signature: String) {
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
    public var transactionId: String
    public var applicationUsername: String

    public init(bundleIdentifier: String? = nil, productIdentifier: String, transactionId: String, applicationUsername: String) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.transactionId = transactionId
        self.applicationUsername = applicationUsername
    }
}

/// The 200 answer of `POST /v1/offers/introductory-eligibility`.
public struct IntroductoryEligibilityResponse: Sendable, Codable, ResponseEncodable {
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
        IntroductoryOfferVerdict(allow: true, reason: "No introductory-offer policy is configured; the App Store still applies its own rule (one introductory offer per subscription group).")
    }
}
