import Foundation

/// One signature the service issued, recorded before the bundle is returned (audit, caps, cool-downs).
public struct IssuedSignature: Sendable, Hashable, Codable {
    /// The nonce, a lower-case UUID; unique.
    public var nonce: String
    /// The key that signed.
    public var keyIdentifier: String
    /// The app.
    public var bundleIdentifier: String
    /// The product.
    public var productIdentifier: String
    /// The offer (empty for introductory-offer eligibility).
    public var offerIdentifier: String
    /// The customer, lower-cased.
    public var applicationUsername: String
    /// When, Unix milliseconds (the legacy signature's timestamp).
    public var timestamp: Int64
    /// `legacy`, `jws` or `introductory-eligibility`.
    public var format: String
    /// Who asked: `api` (the app's backend through `/v1/offers/…`) or `retention` (the App Store's real-time
    /// retention request).
    public var channel: String
    /// The App Store's `requestIdentifier` of a retention request (`nil` for the API).
    public var requestIdentifier: String?

    /// Creates a record.
    public init(
        nonce: String,
        keyIdentifier: String,
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        applicationUsername: String,
        timestamp: Int64,
        format: String,
        channel: String = "api",
        requestIdentifier: String? = nil
    ) {
        self.nonce = nonce
        self.keyIdentifier = keyIdentifier
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.applicationUsername = applicationUsername
        self.timestamp = timestamp
        self.format = format
        self.channel = channel
        self.requestIdentifier = requestIdentifier
    }

    private enum CodingKeys: String, CodingKey {
        case nonce, keyIdentifier, bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, timestamp, format, channel,
            requestIdentifier
    }

    /// Decodes a record; one written before channels existed is from the API.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            nonce: try container.decode(String.self, forKey: .nonce),
            keyIdentifier: try container.decode(String.self, forKey: .keyIdentifier),
            bundleIdentifier: try container.decode(String.self, forKey: .bundleIdentifier),
            productIdentifier: try container.decode(String.self, forKey: .productIdentifier),
            offerIdentifier: try container.decode(String.self, forKey: .offerIdentifier),
            applicationUsername: try container.decode(String.self, forKey: .applicationUsername),
            timestamp: try container.decode(Int64.self, forKey: .timestamp),
            format: try container.decode(String.self, forKey: .format),
            channel: try container.decodeIfPresent(String.self, forKey: .channel) ?? "api",
            requestIdentifier: try container.decodeIfPresent(String.self, forKey: .requestIdentifier)
        )
    }
}
