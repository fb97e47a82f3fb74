/// Why the App Store refunded or revoked a transaction.
///
/// [revocationReason](https://developer.apple.com/documentation/appstoreserverapi/revocationreason)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct RevocationReason: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `0`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `0`: Another reason, for example an accidental purchase.
    public static let other = Self(rawValue: 0)

    /// `1`: An actual or perceived issue within the app.
    public static let appIssue = Self(rawValue: 1)
}
