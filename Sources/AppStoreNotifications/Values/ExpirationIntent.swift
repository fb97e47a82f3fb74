/// Why a subscription expired.
///
/// [expirationIntent](https://developer.apple.com/documentation/appstoreserverapi/expirationintent)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct ExpirationIntent: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `1`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `1`: The customer cancelled (turned off auto-renew).
    public static let customerCancelled = Self(rawValue: 1)

    /// `2`: A billing error.
    public static let billingError = Self(rawValue: 2)

    /// `3`: The customer did not consent to a price increase.
    public static let customerDidNotConsentToPriceIncrease = Self(rawValue: 3)

    /// `4`: The product was not available for purchase at renewal.
    public static let productNotAvailable = Self(rawValue: 4)

    /// `5`: Another reason.
    public static let other = Self(rawValue: 5)
}
