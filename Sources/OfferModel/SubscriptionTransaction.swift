import Foundation

/// One App Store transaction of an auto-renewable subscription, offer or not, as recorded once per (environment,
/// transaction identifier) in `subscription_transactions`: what an experiment's metrics read (docs/experiments.md)
/// — a paid transaction (converted), the period it entitles to (retained), its price (realized revenue), and its
/// refund.
///
/// Every field has been range-checked by the application: identifiers bounded, `price` within
/// ``Redemption/priceRange`` or `nil`, dates plausible Unix milliseconds.
public struct SubscriptionTransaction: Sendable, Hashable {
    /// The App Store environment (`Production`, `Sandbox`, …).
    public var environment: String
    public var transactionId: String
    public var originalTransactionId: String
    /// The customer the transaction is filed under.
    public var customer: CustomerKey
    public var productIdentifier: String
    /// Apple's `subscriptionGroupIdentifier`.
    public var subscriptionGroupIdentifier: String
    /// The price paid, in milliunits of ``currency`` (0 for a free period), or `nil` when not known.
    public var price: Int64?
    /// The ISO 4217 currency of ``price``.
    public var currency: String?
    /// When the App Store charged the customer, Unix milliseconds.
    public var purchaseDate: Int64
    /// When the period it pays for ends, Unix milliseconds.
    public var expiresDate: Int64?
    /// When the App Store refunded or revoked it, Unix milliseconds.
    public var revocationDate: Int64?

    /// Creates a transaction.
    public init(
        environment: String,
        transactionId: String,
        originalTransactionId: String,
        customer: CustomerKey,
        productIdentifier: String,
        subscriptionGroupIdentifier: String,
        price: Int64?,
        currency: String?,
        purchaseDate: Int64,
        expiresDate: Int64?,
        revocationDate: Int64?
    ) {
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.customer = customer
        self.productIdentifier = productIdentifier
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.price = price
        self.currency = currency
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
        self.revocationDate = revocationDate
    }
}

/// What an experiment report asks the store (``OfferStore/experimentOutcomes(_:)``): each variant's customers
/// exposed, and of those whose window is mature, what they did within it.
public struct ExperimentOutcomeQuery: Sendable, Hashable {
    public var experimentIdentifier: String
    /// The app and product of the experiment: its subscription group is the group of this product's transactions.
    public var bundleIdentifier: String
    public var productIdentifier: String
    /// The offers each variant's customers may redeem (a holdout: every offer of the experiment, a leak).
    public var offers: [String: [String]]
    /// The window every metric is read over, milliseconds after each customer's exposure.
    public var window: Int64
    /// Customers exposed at or before this (Unix ms; now minus the window) are mature and counted.
    public var matureAt: Int64
    /// Only customers exposed before this (the experiment's `end`, Unix ms) are counted, if set.
    public var exposedBefore: Int64?

    /// Creates a query.
    public init(
        experimentIdentifier: String,
        bundleIdentifier: String,
        productIdentifier: String,
        offers: [String: [String]],
        window: Int64,
        matureAt: Int64,
        exposedBefore: Int64?
    ) {
        self.experimentIdentifier = experimentIdentifier
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offers = offers
        self.window = window
        self.matureAt = matureAt
        self.exposedBefore = exposedBefore
    }
}
