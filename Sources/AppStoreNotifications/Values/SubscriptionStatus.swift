/// The status of an auto-renewable subscription when a notification was sent.
///
/// [status](https://developer.apple.com/documentation/appstoreserverapi/status)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct SubscriptionStatus: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `1`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `1`: The subscription is active.
    public static let active = Self(rawValue: 1)

    /// `2`: The subscription expired.
    public static let expired = Self(rawValue: 2)

    /// `3`: The subscription is in the billing retry period.
    public static let billingRetry = Self(rawValue: 3)

    /// `4`: The subscription is in the billing grace period.
    public static let billingGracePeriod = Self(rawValue: 4)

    /// `5`: The subscription was revoked.
    public static let revoked = Self(rawValue: 5)
}
