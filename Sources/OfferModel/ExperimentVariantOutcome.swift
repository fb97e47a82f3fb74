/// What one experiment variant's exposed customers did, as the store counts it (docs/experiments.md): every metric
/// over the mature customers only — exposed at least the experiment's window ago (and before its end) — each
/// within the window after their own exposure.
public struct ExperimentVariantOutcome: Sendable, Hashable {
    /// Customers exposed to the variant.
    public var exposed: Int
    /// Of them, customers whose window has passed: the customers every other count is over.
    public var mature: Int
    /// Customers who redeemed one of the variant's offers of the product within the window.
    public var redeemed: Int
    /// Of those, customers whose subscription renewed at full price within the window.
    public var renewedAfterOffer: Int
    /// Customers with a paid transaction (price above 0, not refunded) in the product's subscription group within
    /// the window, offer or not.
    public var converted: Int
    /// Customers still entitled at the window's end: a transaction of the group whose period covers that moment,
    /// not refunded by then.
    public var retained: Int
    /// Every transaction of the group within the window, renewals included, refunded ones left out: milliunits by
    /// ISO 4217 currency.
    public var revenue: [String: Int64]
    /// What the revenue comparison's interval needs beside ``revenue``, by the same currencies.
    public var revenueDetail: [String: RevenueDetail]

    /// One currency's revenue per customer, beyond its sum: over the customers who paid anything in it.
    public struct RevenueDetail: Sendable, Hashable {
        /// Customers whose revenue in the currency is above 0 (the others count with 0).
        public var payers: Int
        /// The sum of each customer's revenue squared, milliunits².
        public var sumOfSquares: Double
        /// The largest one customer's revenue, milliunits.
        public var largest: Int64

        public init(payers: Int, sumOfSquares: Double, largest: Int64) {
            self.payers = payers
            self.sumOfSquares = sumOfSquares
            self.largest = largest
        }
    }

    public init(
        exposed: Int,
        mature: Int = 0,
        redeemed: Int = 0,
        renewedAfterOffer: Int = 0,
        converted: Int = 0,
        retained: Int = 0,
        revenue: [String: Int64] = [:],
        revenueDetail: [String: RevenueDetail] = [:]
    ) {
        self.exposed = exposed
        self.mature = mature
        self.redeemed = redeemed
        self.renewedAfterOffer = renewedAfterOffer
        self.converted = converted
        self.retained = retained
        self.revenue = revenue
        self.revenueDetail = revenueDetail
    }
}
