import Foundation

/// Which window an outcome report covers: `[from, to)` in Unix milliseconds, optionally one app and one App Store
/// environment (the environment narrows redemptions and retention answers; issued signatures have none).
public struct OutcomeQuery: Sendable, Hashable {
    /// The window's start, inclusive, Unix milliseconds.
    public var from: Int64
    /// The window's end, exclusive, Unix milliseconds.
    public var to: Int64
    /// One app, or every app.
    public var bundleIdentifier: String?
    /// One App Store environment, or every one.
    public var environment: String?
    /// Only these apps (a page of the report: its rows' apps), or no such bound. Set by the store, not by callers.
    package var pageBundles: [String]?

    /// Creates a query.
    public init(from: Int64, to: Int64, bundleIdentifier: String? = nil, environment: String? = nil) {
        self.from = from
        self.to = to
        self.bundleIdentifier = bundleIdentifier
        self.environment = environment
    }
}

/// What the offers of a window became (`GET /admin/outcomes`; docs/outcomes.md). JSON keys are the documented
/// ones (`bundleId`, `productId`).
public struct OutcomeReport: Sendable, Hashable, Codable {
    /// The window's start, inclusive.
    public var from: Date
    /// The window's end, exclusive.
    public var to: Date
    /// One row per app, product, offer, offer type and channel, sorted by those.
    public var offers: [OfferOutcome]
    /// The retention answers of the window.
    public var retention: RetentionOutcome

    /// Creates a report.
    public init(from: Date, to: Date, offers: [OfferOutcome], retention: RetentionOutcome) {
        self.from = from
        self.to = to
        self.offers = offers
        self.retention = retention
    }
}

/// One offer's figures in a window.
public struct OfferOutcome: Sendable, Hashable, Codable {
    /// The app (`bundleId` in JSON).
    public var bundleIdentifier: String
    /// The product (`productId` in JSON).
    public var productIdentifier: String
    /// Empty for an introductory offer (which has none).
    public var offerIdentifier: String
    /// Apple's `offerType` (2 for the signatures this service issued).
    public var offerType: Int32
    /// `app` (signed for an app's request, or redeemed without a signature from here) or `retention`.
    public var channel: String
    /// Signatures issued in the window.
    public var issued: Int
    /// Distinct customers those signatures were issued to.
    public var customers: Int
    /// Redemptions purchased in the window.
    public var redeemed: Int
    /// Of those, the ones joined to a signature from this service.
    public var attributed: Int
    /// Of those redeemed, the ones renewed at full price at least once after the offer.
    public var renewedAfterOffer: Int
    /// Of those redeemed, the ones refunded.
    public var refunded: Int
    /// What the redemptions were charged, per currency.
    public var revenue: [Revenue]

    /// Creates a row.
    public init(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        offerType: Int32,
        channel: String,
        issued: Int = 0,
        customers: Int = 0,
        redeemed: Int = 0,
        attributed: Int = 0,
        renewedAfterOffer: Int = 0,
        refunded: Int = 0,
        revenue: [Revenue] = []
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.offerType = offerType
        self.channel = channel
        self.issued = issued
        self.customers = customers
        self.redeemed = redeemed
        self.attributed = attributed
        self.renewedAfterOffer = renewedAfterOffer
        self.refunded = refunded
        self.revenue = revenue
    }

    private enum CodingKeys: String, CodingKey {
        case bundleIdentifier = "bundleId"
        case productIdentifier = "productId"
        case offerIdentifier, offerType, channel, issued, customers
        case redeemed, attributed, renewedAfterOffer, refunded, revenue
    }
}

/// An amount in one currency.
public struct Revenue: Sendable, Hashable, Codable {
    /// ISO 4217.
    public var currency: String
    /// The sum, in thousandths of the currency's unit.
    public var milliunits: Int64

    /// Creates an amount.
    public init(currency: String, milliunits: Int64) {
        self.currency = currency
        self.milliunits = milliunits
    }
}

/// Retention answers given in the window and whether the customers stayed.
public struct RetentionOutcome: Sendable, Hashable, Codable {
    /// Real-time retention requests answered.
    public var answered: Int
    /// Of those, answered with a promotional offer.
    public var offers: Int
    /// Of those answered, customers who turned auto-renew back on or renewed after the answer.
    public var saved: Int
    /// `saved / answered` (0 when nothing was answered).
    public var saveRate: Double

    /// Creates the figures; the save rate follows from them.
    public init(answered: Int, offers: Int, saved: Int) {
        self.answered = answered
        self.offers = offers
        self.saved = saved
        self.saveRate = answered == 0 ? 0 : Double(saved) / Double(answered)
    }
}

/// A page of the outcome report (the console's Offers table): the rows of the offers with the most signatures
/// issued in the window, each with the figures the whole report has for it (``OfferStore/outcomePage(_:limit:offset:)``).
public struct OutcomePage: Sendable, Hashable {
    /// The page's rows, the most signatures first (then by app, product, offer, offer type and channel).
    public var offers: [OfferOutcome]
    /// How many rows the whole report has.
    public var rowCount: Int

    /// Creates a page.
    public init(offers: [OfferOutcome], rowCount: Int) {
        self.offers = offers
        self.rowCount = rowCount
    }
}

/// One UTC day's signatures issued and offers redeemed, every offer added up (the console's daily chart), as the
/// report of that day (cut to the window) counts them (``OfferStore/dailyOutcomeTotals(_:)``).
public struct DailyOutcomeTotals: Sendable, Hashable {
    /// The day's start, or the window's start on its first day.
    public var from: Date
    /// Signatures issued that day.
    public var issued: Int
    /// Redemptions purchased that day.
    public var redeemed: Int

    /// Creates a day's totals.
    public init(from: Date, issued: Int, redeemed: Int) {
        self.from = from
        self.issued = issued
        self.redeemed = redeemed
    }
}

/// A window's outcome figures added up over every offer: what a summary shows without the report's rows, read from
/// the rollups and through the tables' time indexes (``OfferStore/outcomeTotals(_:)``). Distinct customers are not
/// among them (they cannot be added across offers).
public struct OutcomeTotals: Sendable, Hashable {
    /// Signatures issued in the window (introductory-offer eligibility aside, as in the report).
    public var issued: Int
    /// Redemptions purchased in the window.
    public var redeemed: Int
    /// Of those, the ones joined to a signature from this service.
    public var attributed: Int
    /// Of those redeemed, the ones renewed at full price at least once after the offer.
    public var renewedAfterOffer: Int
    /// Of those redeemed, the ones refunded.
    public var refunded: Int
    /// What the redemptions were charged, per currency, sorted by currency (never summed across currencies).
    public var revenue: [Revenue]
    /// The retention answers of the window.
    public var retention: RetentionOutcome

    /// Creates the totals.
    public init(issued: Int, redeemed: Int, attributed: Int, renewedAfterOffer: Int, refunded: Int, revenue: [Revenue], retention: RetentionOutcome) {
        self.issued = issued
        self.redeemed = redeemed
        self.attributed = attributed
        self.renewedAfterOffer = renewedAfterOffer
        self.refunded = refunded
        self.revenue = revenue
        self.retention = retention
    }
}
