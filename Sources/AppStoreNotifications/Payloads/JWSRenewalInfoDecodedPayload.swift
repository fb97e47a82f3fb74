/// Decoded, verified renewal information of an auto-renewable subscription (`signedRenewalInfo`).
///
/// [JWSRenewalInfoDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwsrenewalinfodecodedpayload)
///
/// Field names are Apple's. Every field is optional and unknown fields are ignored. Dates are UNIX time in
/// **milliseconds** (`Int64`). Renewal info carries no bundle identifier: it is tied to its app through
/// ``originalTransactionId``.
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    /// The product that renews at the next billing period.
    public var autoRenewProductId: String?

    /// Whether the subscription renews.
    public var autoRenewStatus: AutoRenewStatus?

    /// Why the subscription expired.
    public var expirationIntent: ExpirationIntent?

    /// When the billing grace period ends, UNIX time in milliseconds.
    public var gracePeriodExpiresDate: Int64?

    /// Whether the App Store is still trying to renew an expired subscription.
    public var isInBillingRetryPeriod: Bool?

    /// The offer that applies at the next renewal.
    public var offerIdentifier: String?

    /// The type of the offer that applies at the next renewal.
    public var offerType: OfferType?

    /// The payment mode of the offer that applies at the next renewal.
    public var offerDiscountType: OfferDiscountType?

    /// The original transaction identifier of the subscription.
    public var originalTransactionId: String?

    /// Whether the customer consented to a price increase.
    public var priceIncreaseStatus: PriceIncreaseStatus?

    /// The product the customer is subscribed to now.
    public var productIdentifier: String?

    /// The start of the most recent run of the subscription, ignoring lapses under 60 days, UNIX time in milliseconds.
    public var recentSubscriptionStartDate: Int64?

    /// When the subscription renews next, UNIX time in milliseconds.
    public var renewalDate: Int64?

    /// When the App Store signed the renewal info, UNIX time in milliseconds; certificates are checked at this time.
    public var signedDate: Int64?

    /// The environment the renewal info comes from.
    public var environment: AppStoreEnvironment?

    /// The ISO 4217 currency of ``renewalPrice``.
    public var currency: String?

    /// The renewal price in milliunits of ``currency``.
    public var renewalPrice: Int64?

    /// The win-back offers the customer may redeem, best first.
    public var eligibleWinBackOfferIds: [String]?

    /// Creates empty renewal info; set the fields you need.
    public init() {}
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case autoRenewProductId
        case autoRenewStatus
        case expirationIntent
        case gracePeriodExpiresDate
        case isInBillingRetryPeriod
        case offerIdentifier
        case offerType
        case offerDiscountType
        case originalTransactionId
        case priceIncreaseStatus
        case productIdentifier = "productId"
        case recentSubscriptionStartDate
        case renewalDate
        case signedDate
        case environment
        case currency
        case renewalPrice
        case eligibleWinBackOfferIds
    }
}
