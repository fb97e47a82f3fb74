/// The decoded, verified payload of a Retention Messaging real-time request: the App Store asks, while a
/// subscriber is about to cancel, which retention message to show.
///
/// [DecodedRealtimeRequestBody](https://developer.apple.com/documentation/retentionmessaging/decodedrealtimerequestbody)
///
/// Field names are Apple's; every field is required by Apple's documentation but decoded as optional so that a
/// missing one is refused with a clear message rather than a decoding error. There is no `bundleIdentifier`: the app is
/// identified by ``appAppleId``. ``signedDate`` is UNIX time in **milliseconds**.
public struct DecodedRealtimeRequestBody: Codable, Hashable, Sendable {
    /// The original transaction identifier of the customer's subscription.
    public var originalTransactionId: String?

    /// The app's Apple ID.
    public var appAppleId: Int64?

    /// The auto-renewable subscription the customer is looking at.
    public var productIdentifier: String?

    /// The device's locale, an App Store locale short code such as `en-US`.
    public var userLocale: String?

    /// A UUID unique to this request (the same on a retry).
    public var requestIdentifier: String?

    /// The App Store server environment.
    public var environment: AppStoreEnvironment?

    /// When the App Store signed the request, UNIX time in milliseconds.
    public var signedDate: Int64?

    /// Creates a payload (tests, the CLI's `retention explain`).
    public init(
        originalTransactionId: String? = nil,
        appAppleId: Int64? = nil,
        productIdentifier: String? = nil,
        userLocale: String? = nil,
        requestIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        signedDate: Int64? = nil
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productIdentifier = productIdentifier
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.signedDate = signedDate
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case originalTransactionId
        case appAppleId
        case productIdentifier = "productId"
        case userLocale
        case requestIdentifier
        case environment
        case signedDate
    }
}
