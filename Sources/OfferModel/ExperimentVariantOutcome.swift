/// What one experiment variant's exposed customers did, as the store counts it (docs/experiments.md).
public struct ExperimentVariantOutcome: Sendable, Hashable {
    /// Customers exposed to the variant.
    public var exposed: Int
    /// Of them, customers who redeemed one of the variant's offers of the product after their exposure.
    public var redeemed: Int
    /// Of those, customers whose subscription renewed after the offer.
    public var renewedAfterOffer: Int
    /// What those redemptions were paid (refunded ones left out), in milliunits, by ISO 4217 currency.
    public var revenue: [String: Int64]

    public init(exposed: Int, redeemed: Int = 0, renewedAfterOffer: Int = 0, revenue: [String: Int64] = [:]) {
        self.exposed = exposed
        self.redeemed = redeemed
        self.renewedAfterOffer = renewedAfterOffer
        self.revenue = revenue
    }
}
