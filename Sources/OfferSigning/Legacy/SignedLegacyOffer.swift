/// A signed legacy promotional offer: everything StoreKit needs, as `POST /v1/offers/sign` returns it.
///
/// StoreKit 1: `SKPaymentDiscount(identifier: offerIdentifier, keyIdentifier: keyIdentifier,
/// nonce: UUID(uuidString: nonce)!, signature: signature, timestamp: NSNumber(value: timestamp))`, with
/// `SKMutablePayment.applicationUsername = applicationUsername`.
/// StoreKit 2: `.promotionalOffer(offerID: offerIdentifier, keyID: keyIdentifier, nonce: UUID(uuidString: nonce)!,
/// signature: Data(base64Encoded: signature)!, timestamp: Int(timestamp))`, with an `appAccountToken` equal to
/// `applicationUsername`.
public struct SignedLegacyOffer: Sendable, Hashable, Codable {
    /// Always `"legacy"`.
    public var format: String
    /// The app's bundle identifier.
    public var bundleIdentifier: String
    /// The subscription's product identifier.
    public var productIdentifier: String
    /// The promotional offer identifier.
    public var offerIdentifier: String
    /// The customer, exactly as signed (lower-cased): hand this very string to StoreKit.
    public var applicationUsername: String
    /// The key identifier of the key that signed.
    public var keyIdentifier: String
    /// The nonce, a lower-case UUID.
    public var nonce: String
    /// Unix time in milliseconds; the App Store accepts the signature for 24 hours after it.
    public var timestamp: Int64
    /// ECDSA P-256/SHA-256 signature, DER, standard base64 with padding.
    public var signature: String

    /// Creates a bundle.
    public init(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        applicationUsername: String,
        keyIdentifier: String,
        nonce: String,
        timestamp: Int64,
        signature: String
    ) {
        self.format = "legacy"
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.applicationUsername = applicationUsername
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
    }

    /// The offer this bundle is for.
    public var offer: PromotionalOffer {
        PromotionalOffer(
            bundleIdentifier: bundleIdentifier,
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            applicationUsername: applicationUsername,
            requiresApplicationUsername: false
        )
    }

    /// The payload the signature covers.
    public var payload: LegacyOfferPayload {
        LegacyOfferPayload(offer: offer, keyIdentifier: keyIdentifier, nonce: nonce, timestamp: timestamp)
    }
}
