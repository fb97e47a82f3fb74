/// The answer to the App Store's real-time "Get Retention Message" request: Apple's `RealtimeResponseBody`, with
/// exactly one of its fields set.
public struct RealtimeResponseBody: Codable, Sendable, Hashable {
    /// A text message.
    public var message: RetentionMessage?
    /// A switch-plan suggestion.
    public var alternateProduct: RetentionAlternateProduct?
    /// A signed promotional offer.
    public var promotionalOffer: RetentionPromotionalOffer?

    public init(message: RetentionMessage? = nil, alternateProduct: RetentionAlternateProduct? = nil, promotionalOffer: RetentionPromotionalOffer? = nil) {
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
    public var productId: String

    public init(messageIdentifier: String, productId: String) {
        self.messageIdentifier = messageIdentifier
        self.productId = productId
    }
}

/// Apple's `PromotionalOffer`: a message and exactly one signature.
public struct RetentionPromotionalOffer: Codable, Sendable, Hashable {
    public var messageIdentifier: String
    /// A promotional offer V2 JWS whose `transactionId` is the request's `originalTransactionId`.
    public var promotionalOfferSignatureV2: String?
    /// A legacy promotional-offer signature.
    public var promotionalOfferSignatureV1: PromotionalOfferSignatureV1?

    public init(messageIdentifier: String, promotionalOfferSignatureV2: String? = nil, promotionalOfferSignatureV1: PromotionalOfferSignatureV1? = nil) {
        self.messageIdentifier = messageIdentifier
        self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
        self.promotionalOfferSignatureV1 = promotionalOfferSignatureV1
    }
}

/// Apple's `PromotionalOfferSignatureV1`.
public struct PromotionalOfferSignatureV1: Codable, Sendable, Hashable {
    /// The Base64 ECDSA signature.
    public var encodedSignature: String
    public var productId: String
    /// A lower-case UUID.
    public var nonce: String
    /// UNIX time in milliseconds.
    public var timestamp: Int64
    public var keyId: String
    public var offerIdentifier: String
    /// The customer's appAccountToken (lower case), when the customer is known by one; it is the
    /// applicationUsername the signature covers (empty otherwise).
    public var appAccountToken: String?

    public init(encodedSignature: String, productId: String, nonce: String, timestamp: Int64, keyId: String, offerIdentifier: String, appAccountToken: String? = nil) {
        self.encodedSignature = encodedSignature
        self.productId = productId
        self.nonce = nonce
        self.timestamp = timestamp
        self.keyId = keyId
        self.offerIdentifier = offerIdentifier
        self.appAccountToken = appAccountToken
    }
}

