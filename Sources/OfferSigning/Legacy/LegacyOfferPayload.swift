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
        self.applicationUsername = Self.lowercased(offer.applicationUsername)
        self.nonce = Self.lowercased(nonce)
        self.timestamp = timestamp
    }

    /// The payload as a string, fields separated by U+2063.
    public var string: String {
        fields.joined(separator: "\u{2063}")
    }

    /// The seven fields in the order they are signed.
    private var fields: [String] {
        [bundleIdentifier, keyIdentifier, productIdentifier, offerIdentifier, applicationUsername, nonce, String(timestamp)]
    }

    /// The UTF-8 bytes that are signed (``string``'s), written field by field.
    public var bytes: [UInt8] {
        let separator: [UInt8] = [0xE2, 0x81, 0xA3]  // U+2063 in UTF-8
        let fields = self.fields
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.reduce((fields.count - 1) * separator.count) { $0 + $1.utf8.count })
        for (index, field) in fields.enumerated() {
            if index > 0 { bytes.append(contentsOf: separator) }
            bytes.append(contentsOf: field.utf8)
        }
        return bytes
    }

    /// `text.lowercased()`, without a copy when it has no upper-case ASCII letter and nothing beyond ASCII.
    private static func lowercased(_ text: String) -> String {
        text.utf8.allSatisfy({ $0 < 0x80 && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) ? text : text.lowercased()
    }

    /// The payload with each separator written as `\u2063`, for people comparing payloads while debugging
    /// StoreKit's opaque `invalidSignature`.
    public var displayString: String {
        fields.joined(separator: "\\u2063")
    }
}
