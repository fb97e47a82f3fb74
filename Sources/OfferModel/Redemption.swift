import Foundation

/// One App Store transaction that carried an offer (`offerType` present), as recorded once per
/// (environment, transaction identifier) in `redemptions` (docs/outcomes.md).
///
/// Every field has been range-checked by the application before it gets here: identifiers are bounded, `price`
/// is within ``Redemption/priceRange`` or `nil`, `purchaseDate` is a plausible Unix-millisecond date.
public struct Redemption: Sendable, Hashable {
    /// The App Store environment (`Production`, `Sandbox`, …).
    public var environment: String
    /// The transaction that carried the offer.
    public var transactionId: String
    /// The subscription's original transaction.
    public var originalTransactionId: String
    /// The customer the transaction is filed under (the app and the store's customer key).
    public var customer: CustomerKey
    /// The product bought.
    public var productIdentifier: String
    /// Apple's `offerType`, as sent: 1 introductory, 2 promotional, 3 offer code, 4 win-back, 5 retention; an
    /// unknown value is kept.
    public var offerType: Int32
    /// The offer's identifier (`nil` for an introductory offer).
    public var offerIdentifier: String?
    /// Apple's `offerDiscountType`, as sent.
    public var offerDiscountType: String?
    /// Apple's `offerPeriod` (an ISO 8601 duration), as sent.
    public var offerPeriod: String?
    /// The price paid, in milliunits of ``currency``.
    public var price: Int64?
    /// The ISO 4217 currency of ``price``.
    public var currency: String?
    /// The storefront (three letters).
    public var storefront: String?
    /// When the App Store charged the customer, Unix milliseconds.
    public var purchaseDate: Int64

    /// The prices kept: 0 to 10^12 milliunits (a thousand million units of any currency). A sum of a million
    /// such prices still fits a 64-bit integer.
    public static let priceRange: ClosedRange<Int64> = 0...1_000_000_000_000

    /// Creates a redemption.
    public init(
        environment: String,
        transactionId: String,
        originalTransactionId: String,
        customer: CustomerKey,
        productIdentifier: String,
        offerType: Int32,
        offerIdentifier: String? = nil,
        offerDiscountType: String? = nil,
        offerPeriod: String? = nil,
        price: Int64? = nil,
        currency: String? = nil,
        storefront: String? = nil,
        purchaseDate: Int64
    ) {
        self.environment = environment
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.customer = customer
        self.productIdentifier = productIdentifier
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.offerDiscountType = offerDiscountType
        self.offerPeriod = offerPeriod
        self.price = price
        self.currency = currency
        self.storefront = storefront
        self.purchaseDate = purchaseDate
    }

    /// Whether this service can have signed the offer: promotional (2), retention (5) and offers of types Apple adds
    /// later; never introductory offers (1), offer codes (3) or win-back offers (4), which are not signed here.
    public var attributable: Bool { ![1, 3, 4].contains(offerType) && offerIdentifier != nil }
}

/// What recording a redemption did.
public enum RedemptionRecording: Sendable, Hashable {
    /// New; attributed to the signature of this channel (`app` or `retention`), or to none.
    case recorded(channel: String?)
    /// This (environment, transaction) was recorded before: nothing changed.
    case duplicate
    /// A renewal that still carries an offer already recorded for the subscription (a pay-as-you-go offer's later
    /// period): not a second redemption.
    case continuation
    /// The first period of a redemption recorded before from a later period (whose notification came first): the
    /// same redemption, now dated by its first period and attributed to the signature of this channel, or to none.
    case firstPeriod(channel: String?)
}

/// Something that happened to a subscription after a redemption or a retention answer, kept so that it counts
/// whichever arrives first (`subscription_events`).
public struct SubscriptionEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A renewal at full price (its transaction carries no offer).
        case renewed
        /// A transaction was refunded or revoked.
        case refunded
        /// The subscription expired.
        case expired
        /// The customer turned auto-renew back on.
        case autoRenewEnabled = "auto_renew_enabled"
    }

    /// The App Store environment.
    public var environment: String
    /// The subscription it happened to.
    public var originalTransactionId: String
    /// What happened.
    public var kind: Kind
    /// When it happened, Unix milliseconds.
    public var at: Int64
    /// The transaction concerned (the renewal, the refunded one), or empty.
    public var transactionId: String

    /// Creates an event.
    public init(environment: String, originalTransactionId: String, kind: Kind, at: Int64, transactionId: String = "") {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.kind = kind
        self.at = at
        self.transactionId = transactionId
    }
}

/// One answer given to the App Store's real-time retention request, followed to see whether the customer stayed.
public struct RetentionAnswerRecord: Sendable, Hashable {
    /// The app.
    public var bundleIdentifier: String
    /// The App Store's `requestIdentifier`.
    public var requestIdentifier: String
    /// The App Store environment of the request.
    public var environment: String
    /// The original transaction the request was about.
    public var originalTransactionId: String
    /// The product the request was about.
    public var productIdentifier: String
    /// Whether the answer was a promotional offer (not a message or an alternate product).
    public var offered: Bool
    /// When it was answered, Unix milliseconds.
    public var answeredAt: Int64

    /// Creates a record.
    public init(
        bundleIdentifier: String,
        requestIdentifier: String,
        environment: String,
        originalTransactionId: String,
        productIdentifier: String,
        offered: Bool,
        answeredAt: Int64
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.productIdentifier = productIdentifier
        self.offered = offered
        self.answeredAt = answeredAt
    }
}
