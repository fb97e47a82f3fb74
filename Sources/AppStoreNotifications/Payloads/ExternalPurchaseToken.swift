/// The external purchase token carried by an ``NotificationType/externalPurchaseToken`` notification.
///
/// [externalPurchaseToken](https://developer.apple.com/documentation/appstoreservernotifications/externalpurchasetoken)
///
/// It has no `environment` field: as Apple's libraries do, a token whose ``externalPurchaseId`` starts with
/// `SANDBOX` counts as ``AppStoreEnvironment/sandbox``, any other as ``AppStoreEnvironment/production``.
public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
    /// The unique identifier of the token.
    public var externalPurchaseId: String?

    /// When the token was created, UNIX time in milliseconds.
    public var tokenCreationDate: Int64?

    /// The app's Apple ID in the App Store.
    public var appAppleId: Int64?

    /// The app's bundle identifier.
    public var bundleIdentifier: String?

    /// Creates an empty token; set the fields you need.
    public init() {}

    /// The environment implied by ``externalPurchaseId`` (Apple's rule: a `SANDBOX` prefix means sandbox).
    public var environment: AppStoreEnvironment {
        externalPurchaseId?.hasPrefix("SANDBOX") == true ? .sandbox : .production
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case externalPurchaseId
        case tokenCreationDate
        case appAppleId
        case bundleIdentifier = "bundleId"
    }
}
