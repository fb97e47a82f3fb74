/// The type of a subscription offer.
///
/// [offerType](https://developer.apple.com/documentation/appstoreserverapi/offertype)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct OfferType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `1`.
    public let rawValue: Int32

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { String(rawValue) }

    /// `1`: An introductory offer.
    public static let introductoryOffer = Self(rawValue: 1)

    /// `2`: A promotional offer (what OfferSigner signs).
    public static let promotionalOffer = Self(rawValue: 2)

    /// `3`: An offer with a subscription offer code.
    public static let offerCode = Self(rawValue: 3)

    /// `4`: A win-back offer.
    public static let winBackOffer = Self(rawValue: 4)

    /// `5`: A retention offer (announced at WWDC26; Apple's libraries do not model it yet).
    public static let retentionOffer = Self(rawValue: 5)
}
