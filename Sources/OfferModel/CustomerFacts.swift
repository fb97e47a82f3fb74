import Foundation

/// Identifies a customer of one app: the app's bundle identifier and the customer's `applicationUsername`
/// (a hashed account id or an `appAccountToken`), lower-cased as it is signed.
public struct CustomerKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The app.
    public var bundleIdentifier: String
    /// The customer, lower-cased.
    public var applicationUsername: String

    /// Creates a key; `applicationUsername` is lower-cased.
    public init(bundleIdentifier: String, applicationUsername: String) {
        self.bundleIdentifier = bundleIdentifier
        self.applicationUsername = applicationUsername.lowercased()
    }

    public var description: String { "\(bundleIdentifier)/\(applicationUsername)" }
}

/// The state of an auto-renewable subscription, as the App Store reports it (`status` 1–5 of the App Store
/// Server API).
public enum SubscriptionState: String, Sendable, Hashable, Codable, CaseIterable {
    /// Active (1).
    case active
    /// Expired (2).
    case expired
    /// In billing retry: renewal failed and the App Store keeps trying (3).
    case inBillingRetry
    /// In the billing grace period: renewal failed, the customer keeps access for now (4).
    case inGracePeriod
    /// Revoked: refunded or revoked through Family Sharing (5).
    case revoked
}

/// What is known of one customer's subscription in one subscription group.
public struct SubscriptionFacts: Sendable, Hashable, Codable {
    /// The subscription group.
    public var subscriptionGroupIdentifier: String
    /// The product the customer is subscribed to (or was, last).
    public var productIdentifier: String
    /// The original transaction identifier of the subscription.
    public var originalTransactionId: String?
    /// Where the subscription stands.
    public var state: SubscriptionState
    /// Whether it will renew.
    public var autoRenewEnabled: Bool
    /// The product it will renew to; differs from `productIdentifier` after an upgrade or downgrade.
    public var autoRenewProductIdentifier: String?
    /// When the current period ends (or ended).
    public var expiresDate: Date?
    /// When the customer first subscribed in this group.
    public var originalPurchaseDate: Date?
    /// Renewals so far.
    public var renewalCount: Int
    /// Whether the customer has had an introductory offer in this group.
    public var hadIntroductoryOffer: Bool
    /// Why it expired (the App Store's `expirationIntent`: 1 cancelled, 2 billing error, 3 price increase
    /// declined, 4 product unavailable, 5 other).
    public var expirationIntent: Int?
    /// Whether the customer chose to renew to a lower tier (DID_CHANGE_RENEWAL_PREF DOWNGRADE).
    public var downgraded: Bool
    /// The `signedDate` of the newest App Store data folded in; older data does not move the facts back.
    public var lastSignedDate: Date?

    /// Creates subscription facts.
    public init(
        subscriptionGroupIdentifier: String,
        productIdentifier: String,
        originalTransactionId: String? = nil,
        state: SubscriptionState,
        autoRenewEnabled: Bool = true,
        autoRenewProductIdentifier: String? = nil,
        expiresDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        renewalCount: Int = 0,
        hadIntroductoryOffer: Bool = false,
        expirationIntent: Int? = nil,
        downgraded: Bool = false,
        lastSignedDate: Date? = nil
    ) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.productIdentifier = productIdentifier
        self.originalTransactionId = originalTransactionId
        self.state = state
        self.autoRenewEnabled = autoRenewEnabled
        self.autoRenewProductIdentifier = autoRenewProductIdentifier
        self.expiresDate = expiresDate
        self.originalPurchaseDate = originalPurchaseDate
        self.renewalCount = renewalCount
        self.hadIntroductoryOffer = hadIntroductoryOffer
        self.expirationIntent = expirationIntent
        self.downgraded = downgraded
        self.lastSignedDate = lastSignedDate
    }
}

/// An offer an admin granted a customer (customer service making good on a bad experience). It expires, and
/// it is used once: the signature it allowed marks it used.
public struct CustomerServiceGrant: Sendable, Hashable, Codable {
    /// A unique identifier.
    public var id: String
    /// The product the offer is for.
    public var productIdentifier: String
    /// The offer granted.
    public var offerIdentifier: String
    /// The admin who granted it.
    public var grantedBy: String
    /// When.
    public var grantedAt: Date
    /// Until when it can be used.
    public var expiresAt: Date
    /// When it was used, if it was.
    public var usedAt: Date?

    /// Creates a grant.
    public init(
        id: String = UUID().uuidString.lowercased(),
        productIdentifier: String,
        offerIdentifier: String,
        grantedBy: String,
        grantedAt: Date = Date(),
        expiresAt: Date,
        usedAt: Date? = nil
    ) {
        self.id = id
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.grantedBy = grantedBy
        self.grantedAt = grantedAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }

    /// Whether it can still be used at `now`.
    public func isUsable(at now: Date) -> Bool { usedAt == nil && now < expiresAt }
}

/// Everything eligibility rules read about one customer of one app.
public struct CustomerFacts: Sendable, Hashable, Codable {
    /// Who.
    public var key: CustomerKey
    /// One entry per subscription group the customer has or had.
    public var subscriptions: [SubscriptionFacts]
    /// The customer's App Store storefront (ISO 3166-1 alpha-3, e.g. `USA`), when known.
    public var storefront: String?
    /// Flags set by the developer's backend or an admin (`churnRisk` = `high`, …).
    public var flags: [String: String]
    /// Customer-service grants.
    public var grants: [CustomerServiceGrant]
    /// Last change.
    public var updatedAt: Date

    /// Creates facts for a customer the store has not heard of.
    public init(
        key: CustomerKey,
        subscriptions: [SubscriptionFacts] = [],
        storefront: String? = nil,
        flags: [String: String] = [:],
        grants: [CustomerServiceGrant] = [],
        updatedAt: Date = Date()
    ) {
        self.key = key
        self.subscriptions = subscriptions
        self.storefront = storefront
        self.flags = flags
        self.grants = grants
        self.updatedAt = updatedAt
    }

    /// The facts of the subscription group that holds `productIdentifier` (current or renewing product),
    /// else `nil`.
    public func subscription(forProduct productIdentifier: String) -> SubscriptionFacts? {
        subscriptions.first { $0.productIdentifier == productIdentifier || $0.autoRenewProductIdentifier == productIdentifier }
    }

    /// The facts of a subscription group.
    public func subscription(inGroup subscriptionGroupIdentifier: String) -> SubscriptionFacts? {
        subscriptions.first { $0.subscriptionGroupIdentifier == subscriptionGroupIdentifier }
    }
}
