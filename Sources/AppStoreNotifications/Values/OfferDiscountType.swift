/// The payment mode of a subscription offer.
///
/// [offerDiscountType](https://developer.apple.com/documentation/appstoreserverapi/offerdiscounttype)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct OfferDiscountType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"FREE_TRIAL"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `FREE_TRIAL`: A free trial.
    public static let freeTrial = Self(rawValue: "FREE_TRIAL")

    /// `PAY_AS_YOU_GO`: A discounted price for each period.
    public static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")

    /// `PAY_UP_FRONT`: One discounted payment for several periods.
    public static let payUpFront = Self(rawValue: "PAY_UP_FRONT")

    /// `ONE_TIME`: A one-time offer (Advanced Commerce).
    public static let oneTime = Self(rawValue: "ONE_TIME")
}
