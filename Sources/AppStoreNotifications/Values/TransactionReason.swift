/// Whether a transaction is a customer's purchase or a system-initiated renewal.
///
/// [transactionReason](https://developer.apple.com/documentation/appstoreserverapi/transactionreason)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct TransactionReason: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"PURCHASE"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `PURCHASE`: The customer initiated the purchase.
    public static let purchase = Self(rawValue: "PURCHASE")

    /// `RENEWAL`: The App Store renewed the subscription.
    public static let renewal = Self(rawValue: "RENEWAL")
}
