import JWTKit

/// The claims of a StoreKit 2 promotional offer signature (docs/design.md §1.2), audience `promotional-offer`.
///
/// Names as Apple's libraries write them. `iat` is an integer number of seconds and `nonce` a lower-case
/// UUID — Apple's Swift library writes a fractional `iat` and an upper-case nonce; Apple's Python, Node and
/// Java libraries, and this type, do not.
public struct PromotionalOfferV2Claims: JWTPayload, Equatable {
    /// The App Store Connect issuer ID.
    public var iss: String
    /// The app's bundle identifier.
    public var bid: String
    /// Always `promotional-offer`.
    public var aud: String
    /// Issued at, Unix seconds.
    public var iat: Int64
    /// A lower-case UUIDv4.
    public var nonce: String
    /// The subscription's product identifier.
    public var productIdentifier: String
    /// The promotional offer identifier.
    public var offerIdentifier: String
    /// A transaction of the customer's (recommended by Apple); omitted when `nil`.
    public var transactionId: String?

    /// The audience of promotional offer signatures.
    public static let audience = "promotional-offer"

    /// The claims' names as Apple's libraries write them.
    enum CodingKeys: String, CodingKey {
        case iss, bid, aud, iat, nonce
        case productIdentifier = "productId"
        case offerIdentifier, transactionId
    }

    /// Creates the claims.
    public init(iss: String, bid: String, iat: Int64, nonce: String, productIdentifier: String, offerIdentifier: String, transactionId: String?) {
        self.iss = iss
        self.bid = bid
        self.aud = Self.audience
        self.iat = iat
        self.nonce = nonce
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.transactionId = transactionId
    }

    /// No time-based claims to check: the signature carries no `exp`.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// The claims of an introductory-offer eligibility signature (docs/design.md §1.2), audience
/// `introductory-offer-eligibility`.
public struct IntroductoryOfferEligibilityClaims: JWTPayload, Equatable {
    /// The App Store Connect issuer ID.
    public var iss: String
    /// The app's bundle identifier.
    public var bid: String
    /// Always `introductory-offer-eligibility`.
    public var aud: String
    /// Issued at, Unix seconds.
    public var iat: Int64
    /// A lower-case UUIDv4.
    public var nonce: String
    /// The subscription's product identifier.
    public var productIdentifier: String
    /// Whether the App Store may give the customer the product's introductory offer.
    public var allowIntroductoryOffer: Bool
    /// A transaction of the customer's (their `appTransactionId` works for customers without purchases).
    public var transactionId: String

    /// The audience of introductory-offer eligibility signatures.
    public static let audience = "introductory-offer-eligibility"

    /// The claims' names as Apple's libraries write them.
    enum CodingKeys: String, CodingKey {
        case iss, bid, aud, iat, nonce
        case productIdentifier = "productId"
        case allowIntroductoryOffer, transactionId
    }

    /// Creates the claims.
    public init(iss: String, bid: String, iat: Int64, nonce: String, productIdentifier: String, allowIntroductoryOffer: Bool, transactionId: String) {
        self.iss = iss
        self.bid = bid
        self.aud = Self.audience
        self.iat = iat
        self.nonce = nonce
        self.productIdentifier = productIdentifier
        self.allowIntroductoryOffer = allowIntroductoryOffer
        self.transactionId = transactionId
    }

    /// No time-based claims to check: the signature carries no `exp`.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
