import OfferSigning

/// The answer to the App Store's real-time "Get Retention Message" request: Apple's `RealtimeResponseBody`, with
/// exactly one of its fields set.
public struct RealtimeResponseBody: Codable, Sendable, Hashable {
    /// A text message.
    public var message: RetentionMessage?
    /// A switch-plan suggestion.
    public var alternateProduct: RetentionAlternateProduct?
    /// A signed promotional offer.
    public var promotionalOffer: RetentionPromotionalOffer?

    public init(
        message: RetentionMessage? = nil,
        alternateProduct: RetentionAlternateProduct? = nil,
        promotionalOffer: RetentionPromotionalOffer? = nil
    ) {
        self.message = message
        self.alternateProduct = alternateProduct
        self.promotionalOffer = promotionalOffer
    }
}

/// Apple's `Message`: a message uploaded with the Retention Messaging API.
public struct RetentionMessage: Codable, Sendable, Hashable {
    public var messageIdentifier: String

    public init(messageIdentifier: String) { self.messageIdentifier = messageIdentifier }
}

/// Apple's `AlternateProduct`: a message and the product of the same subscription group it suggests.
public struct RetentionAlternateProduct: Codable, Sendable, Hashable {
    public var messageIdentifier: String
    public var productIdentifier: String

    public init(messageIdentifier: String, productIdentifier: String) {
        self.messageIdentifier = messageIdentifier
        self.productIdentifier = productIdentifier
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case messageIdentifier
        case productIdentifier = "productId"
    }
}

/// Apple's `PromotionalOffer`: a message and exactly one signature.
public struct RetentionPromotionalOffer: Codable, Sendable, Hashable {
    public var messageIdentifier: String
    /// A promotional offer V2 JWS whose `transactionId` is the request's `originalTransactionId`.
    public var promotionalOfferSignatureV2: String?
    /// A legacy promotional-offer signature.
    public var promotionalOfferSignatureV1: PromotionalOfferSignatureV1?

    public init(
        messageIdentifier: String,
        promotionalOfferSignatureV2: String? = nil,
        promotionalOfferSignatureV1: PromotionalOfferSignatureV1? = nil
    ) {
        self.messageIdentifier = messageIdentifier
        self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
        self.promotionalOfferSignatureV1 = promotionalOfferSignatureV1
    }

    /// The identifier of the key that signed the offer: the JWS header's `kid`, or the V1 signature's `keyIdentifier`.
    public var signingKeyIdentifier: String? {
        promotionalOfferSignatureV2.flatMap { JWSOfferVerifier.decode($0)?.header.kid } ?? promotionalOfferSignatureV1?.keyIdentifier
    }
}

/// Apple's `PromotionalOfferSignatureV1`.
public struct PromotionalOfferSignatureV1: Codable, Sendable, Hashable {
    /// The Base64 ECDSA signature.
    public var encodedSignature: String
    public var productIdentifier: String
    /// A lower-case UUID.
    public var nonce: String
    /// UNIX time in milliseconds.
    public var timestamp: Int64
    public var keyIdentifier: String
    public var offerIdentifier: String
    /// The customer's appAccountToken (lower case), when the customer is known by one; it is the
    /// applicationUsername the signature covers (empty otherwise).
    public var appAccountToken: String?

    public init(
        encodedSignature: String,
        productIdentifier: String,
        nonce: String,
        timestamp: Int64,
        keyIdentifier: String,
        offerIdentifier: String,
        appAccountToken: String? = nil
    ) {
        self.encodedSignature = encodedSignature
        self.productIdentifier = productIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.keyIdentifier = keyIdentifier
        self.offerIdentifier = offerIdentifier
        self.appAccountToken = appAccountToken
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case encodedSignature
        case productIdentifier = "productId"
        case nonce
        case timestamp
        case keyIdentifier = "keyId"
        case offerIdentifier
        case appAccountToken
    }
}
