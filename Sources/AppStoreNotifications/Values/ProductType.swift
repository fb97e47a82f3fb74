/// The type of an in-app purchase.
///
/// [type](https://developer.apple.com/documentation/appstoreserverapi/type)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct ProductType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"Auto-Renewable Subscription"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `Auto-Renewable Subscription`: An auto-renewable subscription.
    public static let autoRenewable = Self(rawValue: "Auto-Renewable Subscription")

    /// `Non-Consumable`: A non-consumable in-app purchase.
    public static let nonConsumable = Self(rawValue: "Non-Consumable")

    /// `Consumable`: A consumable in-app purchase.
    public static let consumable = Self(rawValue: "Consumable")

    /// `Non-Renewing Subscription`: A non-renewing subscription.
    public static let nonRenewing = Self(rawValue: "Non-Renewing Subscription")
}
