/// The summary of a mass subscription-renewal-date extension.
///
/// [summary](https://developer.apple.com/documentation/appstoreservernotifications/summary)
public struct NotificationSummary: Codable, Hashable, Sendable {
    /// The environment of the extended subscriptions.
    public var environment: AppStoreEnvironment?

    /// The app's Apple ID in the App Store.
    public var appAppleId: Int64?

    /// The app's bundle identifier.
    public var bundleIdentifier: String?

    /// The product whose subscriptions were extended.
    public var productIdentifier: String?

    /// The identifier of the extension request.
    public var requestIdentifier: String?

    /// The storefronts (three-letter codes) the extension applied to.
    public var storefrontCountryCodes: [String]?

    /// How many subscriptions were extended.
    public var succeededCount: Int64?

    /// How many subscriptions could not be extended.
    public var failedCount: Int64?

    /// Creates an empty summary; set the fields you need.
    public init() {}
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case environment
        case appAppleId
        case bundleIdentifier = "bundleId"
        case productIdentifier = "productId"
        case requestIdentifier
        case storefrontCountryCodes
        case succeededCount
        case failedCount
    }
}
