/// Whether the customer bought the product or has it through Family Sharing.
///
/// [inAppOwnershipType](https://developer.apple.com/documentation/appstoreserverapi/inappownershiptype)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct InAppOwnershipType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"FAMILY_SHARED"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `FAMILY_SHARED`: The customer has access through Family Sharing.
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")

    /// `PURCHASED`: The customer bought the product.
    public static let purchased = Self(rawValue: "PURCHASED")
}
