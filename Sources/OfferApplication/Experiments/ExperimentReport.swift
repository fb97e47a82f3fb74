public import Foundation
public import OfferEligibility
public import OfferModel
import OfferExperiments

/// What one variant's exposed customers did (the store's count).
public typealias ExperimentVariantCounts = ExperimentVariantOutcome

/// `GET /admin/experiments/{id}` and `offer-signer experiments report ID` (docs/experiments.md): each variant's
/// exposed customers and what they did, the primary metric's rate with a 95 % always-valid interval, the difference
/// to the holdout (or the first variant) with its interval, and the sample-ratio check. Always-valid intervals may be
/// read after every customer without inflating false positives; a sample-ratio mismatch means the split is broken
/// and nothing should be read.
public struct ExperimentReport: Sendable, Codable, Hashable {
    /// An interval and whether it excludes zero (a difference) — `lower`/`upper` clamped to what a rate can be.
    public struct Interval: Sendable, Codable, Hashable {
        public var estimate: Double
        public var lower: Double
        public var upper: Double
        public var excludesZero: Bool
    }

    /// Revenue in one currency.
    public struct Revenue: Sendable, Codable, Hashable {
        public var currency: String
        public var milliunits: Int64
        /// `milliunits` divided by the variant's exposed customers.
        public var perExposedCustomer: Double
    }

    public struct Variant: Sendable, Codable, Hashable {
        public var name: String
        /// The offer identifier (`app`) or message identifier (`retention`) it gives; absent for the holdout.
        public var answer: String?
        public var holdout: Bool
        public var weight: Int
        public var exposed: Int
        public var redeemed: Int
        public var renewedAfterOffer: Int
        public var revenue: [Revenue]
        /// The primary metric's rate among the exposed (absent for `revenue`, which has no interval).
        public var rate: Interval?
        /// This variant's rate minus the reference's (absent for the reference and for `revenue`).
        public var difference: Interval?
    }

    /// The chi-square check of the exposed counts against the weights.
    public struct SampleRatio: Sendable, Codable, Hashable {
        public var chiSquare: Double
        public var pValue: Double
        /// `pValue` below 0.001: the split is not what the weights say.
        public var mismatch: Bool
    }

    public var id: String
    public var bundleIdentifier: String
    public var productIdentifier: String
    public var channel: String
    public var metric: String
    public var running: Bool
    public var start: Date?
    public var end: Date?
    /// Customers per variant the intervals are tuned for (`plannedCustomers`).
    public var plannedCustomers: Int
    public var confidenceLevel: Double
    /// The variant every difference is taken against: the holdout, else the first.
    public var reference: String
    public var variants: [Variant]
    public var sampleRatio: SampleRatio?
    /// Whether the results may be read now, and why (or why not), in plain words.
    public var readable: Bool
    public var note: String

    /// The API's names: the App Store's `bundleId` and `productId`.
    enum CodingKeys: String, CodingKey {
        case id, bundleIdentifier = "bundleId", productIdentifier = "productId", channel, metric, running, start, end, plannedCustomers
        case confidenceLevel, reference, variants, sampleRatio, readable, note
    }

    /// The report of `experiment` from its variants' counts (a variant not in `counts` exposed nobody).
    public init(experiment: OfferPolicy.Experiment, counts: [String: ExperimentVariantCounts], now: Date) throws(OfferServiceError) {
        let design: SequentialTestDesign
        do {
            design = try SequentialTestDesign(planningSampleSize: experiment.plannedCustomers)
        } catch {
            throw OfferServiceError.invalidRequest(field: "plannedCustomers", error.message)
        }
        let reference = experiment.variants.first(where: \.isHoldout) ?? experiment.variants[0]
        func count(_ name: String) -> ExperimentVariantCounts { counts[name] ?? ExperimentVariantCounts(exposed: 0) }
        func successes(_ counts: ExperimentVariantCounts) -> Int? {
            switch experiment.metric {
            case .redeemed: counts.redeemed
            case .renewedAfterOffer: counts.renewedAfterOffer
            case .revenue: nil
            }
        }
        func conversion(_ counts: ExperimentVariantCounts) -> ConversionCount? {
            guard let successes = successes(counts) else { return nil }
            return try? ConversionCount(successes: min(max(successes, 0), max(counts.exposed, 0)), trials: max(counts.exposed, 0))
        }
        let referenceCount = conversion(count(reference.name))
        self.variants = experiment.variants.map { variant in
            let counts = count(variant.name)
            let rate = conversion(counts).map { Interval(AlwaysValidInterval.rate($0, design: design)) }
            var difference: Interval?
            if variant.name != reference.name, let treatment = conversion(counts), let referenceCount {
                difference = Interval(AlwaysValidInterval.difference(treatment, minus: referenceCount, design: design))
            }
            return Variant(
                name: variant.name, answer: variant.answer, holdout: variant.isHoldout, weight: variant.weight, exposed: counts.exposed,
                redeemed: counts.redeemed, renewedAfterOffer: counts.renewedAfterOffer,
                revenue: counts.revenue.keys.sorted().map { currency in
                    let milliunits = counts.revenue[currency] ?? 0
                    return Revenue(currency: currency, milliunits: milliunits, perExposedCustomer: counts.exposed == 0 ? 0 : Double(milliunits) / Double(counts.exposed))
                },
                rate: rate, difference: difference)
        }
        let exposed = experiment.variants.map { max(count($0.name).exposed, 0) }
        if exposed.reduce(0, +) > 0, let check = try? SampleRatioCheck(observed: exposed, weights: experiment.variants.map(\.weight)) {
            sampleRatio = SampleRatio(chiSquare: check.chiSquare, pValue: check.pValue, mismatch: check.isMismatch)
        }
        (id, bundleIdentifier, productIdentifier) = (experiment.identifier, experiment.bundleIdentifier, experiment.productIdentifier)
        (channel, metric, running) = (experiment.channel.rawValue, experiment.metric.rawValue, experiment.isRunning(at: now))
        (start, end, plannedCustomers) = (experiment.start, experiment.end, experiment.plannedCustomers)
        confidenceLevel = 1 - design.alpha
        self.reference = reference.name
        if exposed.reduce(0, +) == 0 {
            (readable, note) = (false, "No customer has been exposed yet.")
        } else if sampleRatio?.mismatch == true {
            (readable, note) = (false, "Sample ratio mismatch: the exposed customers are not split as the weights say (p < 0.001). Something assigns or exposes customers unevenly; do not read the results until it is found.")
        } else if experiment.metric == .revenue {
            (readable, note) = (true, "Revenue per exposed customer, by currency; it has no interval: compare it with the redemption rates' intervals.")
        } else {
            (readable, note) = (true, "The intervals are always valid: they may be read at any time, as often as you like; a difference whose interval excludes zero is found at the 95 % level.")
        }
    }
}

extension ExperimentReport.Interval {
    init(_ interval: AlwaysValidInterval) {
        self.init(estimate: interval.estimate, lower: interval.lower, upper: interval.upper, excludesZero: interval.excludesZero)
    }
}
