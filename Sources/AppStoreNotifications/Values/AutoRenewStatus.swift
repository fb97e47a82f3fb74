/// Whether an auto-renewable subscription renews at the end of the period.
///
/// [autoRenewStatus](https://developer.apple.com/documentation/appstoreserverapi/autorenewstatus)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct AutoRenewStatus: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `0`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `0`: Auto-renew is off: the subscription expires at the end of the period.
    public static let off = Self(rawValue: 0)

    /// `1`: Auto-renew is on.
    public static let on = Self(rawValue: 1)
}
