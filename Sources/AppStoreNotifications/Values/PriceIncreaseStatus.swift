/// Whether the customer consented to a subscription price increase.
///
/// [priceIncreaseStatus](https://developer.apple.com/documentation/appstoreserverapi/priceincreasestatus)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct PriceIncreaseStatus: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `0`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `0`: The customer has not responded to the price increase.
    public static let customerHasNotResponded = Self(rawValue: 0)

    /// `1`: The customer consented, or was notified of an increase that needs no consent.
    public static let customerConsentedOrWasNotifiedWithoutNeedingConsent = Self(rawValue: 1)
}
