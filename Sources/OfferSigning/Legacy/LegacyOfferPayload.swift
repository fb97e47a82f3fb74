import Foundation

/// The bytes a legacy promotional offer signature covers (docs/design.md §1.1).
///
/// Seven fields joined by U+2063 INVISIBLE SEPARATOR, UTF-8 encoded:
///
///     appBundleId ⁣ keyIdentifier ⁣ productIdentifier ⁣ offerIdentifier ⁣ applicationUsername ⁣ nonce ⁣ timestamp
///
/// `applicationUsername` and `nonce` are lower-cased, `timestamp` is Unix time in milliseconds, in decimal —
/// exactly as Apple's Python, Node, Java and Swift libraries build it.
public struct LegacyOfferPayload: Sendable, Hashable {
    /// The app's bundle identifier.
    public let bundleIdentifier: String
    /// The key identifier of the key that signs.
    public let keyIdentifier: String
    /// The subscription's product identifier.
    public let productIdentifier: String
    /// The promotional offer identifier.
    public let offerIdentifier: String
    /// The customer, lower-cased.
    public let applicationUsername: String
    /// The nonce, a lower-case UUID with dashes.
    public let nonce: String
    /// Unix time in milliseconds.
    public let timestamp: Int64

    /// Builds the payload of `offer` under `keyIdentifier`, lower-casing `applicationUsername` and `nonce`.
    public init(offer: PromotionalOffer, keyIdentifier: String, nonce: String, timestamp: Int64) {
        self.bundleIdentifier = offer.bundleIdentifier
        self.keyIdentifier = keyIdentifier
        self.productIdentifier = offer.productIdentifier
        self.offerIdentifier = offer.offerIdentifier
        self.applicationUsername = offer.applicationUsername.lowercased()
        self.nonce = nonce.lowercased()
        self.timestamp = timestamp
    }

    /// The payload as a string, fields separated by U+2063.
    public var string: String {
        [bundleIdentifier, keyIdentifier, productIdentifier, offerIdentifier, applicationUsername, nonce, String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// The UTF-8 bytes that are signed.
    public var bytes: [UInt8] { Array(string.utf8) }

    /// The payload with each separator written as `\u2063`, for people comparing payloads while debugging
    /// StoreKit's opaque `invalidSignature`.
    public var displayString: String {
        [bundleIdentifier, keyIdentifier, productIdentifier, offerIdentifier, applicationUsername, nonce, String(timestamp)]
            .joined(separator: "\\u2063")
    }
}
