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

    /// Creates a record.
    public init(nonce: String, keyIdentifier: String, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, applicationUsername: String, timestamp: Int64, format: String) {
        self.nonce = nonce
        self.keyIdentifier = keyIdentifier
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.applicationUsername = applicationUsername
        self.timestamp = timestamp
        self.format = format
    }
}
