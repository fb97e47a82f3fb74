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

    /// The UTF-8 bytes that are signed (``string``'s), written field by field (no array of the fields).
    public var bytes: [UInt8] {
        let timestamp = String(self.timestamp)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(
            bundleIdentifier.utf8.count + keyIdentifier.utf8.count + productIdentifier.utf8.count
                + offerIdentifier.utf8.count + applicationUsername.utf8.count + nonce.utf8.count + timestamp.utf8.count + 6 * 3
        )
        func add(_ field: String) {
            var field = field
            field.withUTF8 { bytes.append(contentsOf: $0) }
        }
        func separator() {
            bytes.append(0xE2)  // U+2063 in UTF-8
            bytes.append(0x81)
            bytes.append(0xA3)
        }
        add(bundleIdentifier)
        separator()
        add(keyIdentifier)
        separator()
        add(productIdentifier)
        separator()
        add(offerIdentifier)
        separator()
        add(applicationUsername)
        separator()
        add(nonce)
        separator()
        add(timestamp)
        return bytes
    }

    /// `text.lowercased()`, without a copy when it has no upper-case ASCII letter and nothing beyond ASCII.
    private static func lowercased(_ text: String) -> String {
        var copy = text
        let unchanged = copy.withUTF8 { bytes in
            for byte in bytes where byte >= 0x80 || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) { return false }
            return true
        }
        return unchanged ? text : text.lowercased()
    }

    /// The payload with each separator written as `\u2063`, for people comparing payloads while debugging
    /// StoreKit's opaque `invalidSignature`.
    public var displayString: String {
        fields.joined(separator: "\\u2063")
    }
}
