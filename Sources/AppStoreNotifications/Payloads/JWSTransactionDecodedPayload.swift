/// A decoded, verified signed transaction (`signedTransactionInfo`, StoreKit 2's `jwsRepresentation`).
///
/// [JWSTransactionDecodedPayload](https://developer.apple.com/documentation/appstoreserverapi/jwstransactiondecodedpayload)
///
/// Field names are Apple's. Every field is optional and unknown fields are ignored. Dates are UNIX time in
/// **milliseconds** (`Int64`), exactly as signed; ``Foundation/Date/init(appStoreMilliseconds:)`` converts them.
public struct JWSTransactionDecodedPayload: Codable, Hashable, Sendable {
    /// The transaction identifier of the original purchase: stable across renewals, the customer's subscription key.
    public var originalTransactionId: String?

    /// The identifier of this transaction (purchase, restore or renewal).
    public var transactionId: String?

    /// The identifier of subscription-purchase events across devices, including renewals.
    public var webOrderLineItemId: String?

    /// The app's bundle identifier.
    public var bundleIdentifier: String?

    /// The product identifier from App Store Connect.
    public var productIdentifier: String?

    /// The subscription group of the product.
    public var subscriptionGroupIdentifier: String?

    /// When the App Store charged the customer, UNIX time in milliseconds.
    public var purchaseDate: Int64?

    /// The purchase date of the original transaction, UNIX time in milliseconds.
    public var originalPurchaseDate: Int64?

    /// When the subscription expires or renews, UNIX time in milliseconds.
    public var expiresDate: Int64?

    /// The number of consumables purchased.
    public var quantity: Int32?

    /// The type of the in-app purchase.
    public var type: ProductType?

    /// The UUID the app attached to the purchase (`appAccountToken`), as sent (lower-case it before comparing).
    public var appAccountToken: String?

    /// Whether the customer bought the product or has it through Family Sharing.
    public var inAppOwnershipType: InAppOwnershipType?

    /// When the App Store signed the transaction, UNIX time in milliseconds; certificates are checked at this time.
    public var signedDate: Int64?

    /// Why the App Store refunded or revoked the transaction.
    public var revocationReason: RevocationReason?

    /// When the App Store refunded or revoked the transaction, UNIX time in milliseconds.
    public var revocationDate: Int64?

    /// Whether the customer upgraded to another subscription.
    public var isUpgraded: Bool?

    /// The type of the offer applied to the transaction.
    public var offerType: OfferType?

    /// The promotional offer identifier or offer code reference name.
    public var offerIdentifier: String?

    /// The environment the transaction comes from.
    public var environment: AppStoreEnvironment?

    /// The three-letter code of the storefront.
    public var storefront: String?

    /// Apple's identifier of the storefront.
    public var storefrontId: String?

    /// Whether this is a customer's purchase or a renewal.
    public var transactionReason: TransactionReason?

    /// The ISO 4217 currency of ``price``.
    public var currency: String?

    /// The price in milliunits of ``currency``.
    public var price: Int64?

    /// The payment mode of the offer applied to the transaction.
    public var offerDiscountType: OfferDiscountType?

    /// The duration of the offer applied to the transaction (ISO 8601 duration).
    public var offerPeriod: String?

    /// The identifier of the app transaction.
    public var appTransactionId: String?

    /// Creates an empty transaction; set the fields you need (test support builds transactions this way).
    public init() {}
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case originalTransactionId
        case transactionId
        case webOrderLineItemId
        case bundleIdentifier = "bundleId"
        case productIdentifier = "productId"
        case subscriptionGroupIdentifier
        case purchaseDate
        case originalPurchaseDate
        case expiresDate
        case quantity
        case type
        case appAccountToken
        case inAppOwnershipType
        case signedDate
        case revocationReason
        case revocationDate
        case isUpgraded
        case offerType
        case offerIdentifier
        case environment
        case storefront
        case storefrontId
        case transactionReason
        case currency
        case price
        case offerDiscountType
        case offerPeriod
        case appTransactionId
    }
}
