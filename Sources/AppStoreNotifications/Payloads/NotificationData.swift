/// The app metadata and signed transaction information of a notification.
///
/// [data](https://developer.apple.com/documentation/appstoreservernotifications/data)
///
/// ``signedTransactionInfo`` and ``signedRenewalInfo`` are themselves JWS: verify them with
/// ``SignedDataVerifier/verifyAndDecodeTransaction(_:)`` and ``SignedDataVerifier/verifyAndDecodeRenewalInfo(_:)``,
/// or use ``SignedDataVerifier/verifyAndDecodeNotificationContents(_:)`` which does all three.
public struct NotificationData: Codable, Hashable, Sendable {
    /// The app's Apple ID in the App Store (absent in the sandbox).
    public var appAppleId: Int64?

    /// The app's bundle identifier.
    public var bundleIdentifier: String?

    /// The app's build version (`CFBundleVersion`).
    public var bundleVersion: String?

    /// The environment the notification comes from.
    public var environment: AppStoreEnvironment?

    /// The transaction, as a JWS signed by the App Store (`JWSTransaction`).
    public var signedTransactionInfo: String?

    /// The subscription renewal information, as a JWS signed by the App Store (`JWSRenewalInfo`).
    public var signedRenewalInfo: String?

    /// The status of the subscription when the notification was sent.
    public var status: SubscriptionStatus?

    /// Why the customer asked for a refund (``NotificationType/consumptionRequest`` only), as Apple's string.
    public var consumptionRequestReason: String?

    /// Creates empty data; set the fields you need.
    public init() {}
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case appAppleId
        case bundleIdentifier = "bundleId"
        case bundleVersion
        case environment
        case signedTransactionInfo
        case signedRenewalInfo
        case status
        case consumptionRequestReason
    }
}
