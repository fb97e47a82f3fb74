public import Foundation
public import OfferEligibility
public import OfferModel
public import OfferExperiments

/// What one variant's exposed customers did (the store's count).
public typealias ExperimentVariantCounts = ExperimentVariantOutcome

/// `GET /admin/experiments/{id}` and `offer-signer experiments report ID` (docs/experiments.md): each variant's
/// exposed customers, how many of them are mature (exposed at least `windowDays` ago, before `end`) and what those
/// did within their window — redeemed, renewed after the offer, converted, retained, realized revenue; the primary
/// metric's rate with an always-valid interval; the comparisons (each variant against the reference, and on request
/// every pair) with intervals corrected for their number (Bonferroni) and a verdict; and the sample-ratio check.
public struct ExperimentReport: Sendable, Codable, Hashable {
    /// An interval and whether it excludes zero (a difference) — `lower`/`upper` clamped to what a rate can be.
    public struct Interval: Sendable, Codable, Hashable {
        public var estimate: Double
        public var lower: Double
        public var upper: Double
        public var excludesZero: Bool
    }

    /// Realized revenue in one currency (never summed across currencies).
    public struct Revenue: Sendable, Codable, Hashable {
        public var currency: String
        public var milliunits: Int64
        /// `milliunits` divided by the variant's mature customers.
        public var perExposedCustomer: Double
    }

    public struct Variant: Sendable, Codable, Hashable {
        public var name: String
        /// The offer identifier (`app`) or message identifier (`retention`) it gives; absent for the holdout.
        public var answer: String?
        public var holdout: Bool
        public var weight: Int
        /// Customers exposed (before `end`).
        public var exposed: Int
        /// Of them, customers whose window has passed: every count below is over these.
        public var mature: Int
        /// Exposed customers whose window has not passed yet (not counted).
        public var maturing: Int
        public var redeemed: Int
        public var renewedAfterOffer: Int
        public var converted: Int
        public var retained: Int
        public var revenue: [Revenue]
        /// The primary metric's rate among the mature (absent for `revenue`, which has no interval), at the
        /// experiment's level `1 − alpha`.
        public var rate: Interval?
        /// This variant's rate minus the reference's at the corrected level (absent for the reference and `revenue`).
        public var difference: Interval?
    }

    /// One difference tested: `variant` minus `against` on the primary metric, at the corrected level.
    public struct Comparison: Sendable, Codable, Hashable {
        public var variant: String
        public var against: String
        public var difference: Interval
        /// `better`, `worse` or `noDifferenceYet`.
        public var verdict: ComparisonVerdict
        /// The finding in words.
        public var summary: String
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
    /// Days after each exposure every metric is read over.
    public var windowDays: Int
    /// The chance of any false finding among the comparisons (`alpha`).
    public var alpha: Double
    /// `1 − alpha`: each variant's rate interval.
    public var confidenceLevel: Double
    /// How `alpha` is shared among the comparisons: `Bonferroni`, each at `alpha / comparisons`.
    public var correction: String
    /// `1 − alpha / comparisons`: each comparison's interval.
    public var comparisonConfidenceLevel: Double
    /// The variant every `difference` is taken against: the holdout, else the first.
    public var reference: String
    public var variants: [Variant]
    /// The differences tested (`comparisons: reference` or `pairs`); empty for `revenue`.
    public var comparisons: [Comparison]
    public var sampleRatio: SampleRatio?
    /// Whether the results may be read now, and why (or why not), in plain words.
    public var readable: Bool
    public var note: String

    /// The API's names: the App Store's `bundleId` and `productId`.
    enum CodingKeys: String, CodingKey {
        case id, bundleIdentifier = "bundleId", productIdentifier = "productId", channel, metric, running, start, end, plannedCustomers
        case windowDays, alpha, confidenceLevel, correction, comparisonConfidenceLevel, reference, variants, comparisons, sampleRatio
        case readable, note
    }

    /// The report of `experiment` from its variants' counts (a variant not in `counts` exposed nobody).
    public init(experiment: OfferPolicy.Experiment, counts: [String: ExperimentVariantCounts], now: Date) throws(OfferServiceError) {
        let referenceIndex = experiment.variants.firstIndex(where: \.isHoldout) ?? 0
        let set: ComparisonSet
        let design: SequentialTestDesign
        do {
            set = try ComparisonSet(variantCount: experiment.variants.count, reference: referenceIndex, allPairs: experiment.comparisons == .pairs,
                                    alpha: experiment.alpha, planningSampleSize: experiment.plannedCustomers)
            design = try SequentialTestDesign(planningSampleSize: experiment.plannedCustomers, alpha: experiment.alpha)
        } catch {
            throw OfferServiceError.invalidRequest(field: "plannedCustomers", error.message)
        }
        let reference = experiment.variants[referenceIndex]
        func count(_ name: String) -> ExperimentVariantCounts { counts[name] ?? ExperimentVariantCounts(exposed: 0) }
        func conversion(_ counts: ExperimentVariantCounts) -> ConversionCount? {
            let successes: Int
            switch experiment.metric {
            case .redeemed: successes = counts.redeemed
            case .renewedAfterOffer: successes = counts.renewedAfterOffer
            case .converted: successes = counts.converted
            case .retained: successes = counts.retained
            case .revenue: return nil
            }
            let trials = max(counts.mature, 0)
            return try? ConversionCount(successes: min(max(successes, 0), trials), trials: trials)
        }
        let conversions = experiment.variants.map { conversion(count($0.name)) }
        var differences: [Int: Interval] = [:]
        var comparisons: [Comparison] = []
        if conversions.allSatisfy({ $0 != nil }) {
            let level = 1 - set.design.alpha
            for (pair, interval) in set.differences(conversions.compactMap { $0 }) {
                let (variant, against) = (experiment.variants[pair.variant].name, experiment.variants[pair.against].name)
                if pair.against == referenceIndex { differences[pair.variant] = Interval(interval) }
                comparisons.append(Comparison(
                    variant: variant, against: against, difference: Interval(interval), verdict: ComparisonSet.verdict(interval),
                    summary: Self.summary(variant, against, interval, metric: experiment.metric.rawValue, level: level)))
            }
        }
        self.variants = experiment.variants.enumerated().map { index, variant in
            let counts = count(variant.name)
            let mature = max(counts.mature, 0)
            return Variant(
                name: variant.name, answer: variant.answer, holdout: variant.isHoldout, weight: variant.weight, exposed: counts.exposed,
                mature: mature, maturing: max(counts.exposed - mature, 0),
                redeemed: counts.redeemed, renewedAfterOffer: counts.renewedAfterOffer, converted: counts.converted, retained: counts.retained,
                revenue: counts.revenue.keys.sorted().map { currency in
                    let milliunits = counts.revenue[currency] ?? 0
                    return Revenue(currency: currency, milliunits: milliunits, perExposedCustomer: mature == 0 ? 0 : Double(milliunits) / Double(mature))
                },
                rate: conversions[index].map { Interval(AlwaysValidInterval.rate($0, design: design)) }, difference: differences[index])
        }
        self.comparisons = comparisons
        let exposed = experiment.variants.map { max(count($0.name).exposed, 0) }
        if exposed.reduce(0, +) > 0, let check = try? SampleRatioCheck(observed: exposed, weights: experiment.variants.map(\.weight)) {
            sampleRatio = SampleRatio(chiSquare: check.chiSquare, pValue: check.pValue, mismatch: check.isMismatch)
        }
        (id, bundleIdentifier, productIdentifier) = (experiment.identifier, experiment.bundleIdentifier, experiment.productIdentifier)
        (channel, metric, running) = (experiment.channel.rawValue, experiment.metric.rawValue, experiment.isRunning(at: now))
        (start, end, plannedCustomers, windowDays) = (experiment.start, experiment.end, experiment.plannedCustomers, experiment.windowDays)
        (alpha, confidenceLevel, correction) = (experiment.alpha, 1 - experiment.alpha, ComparisonSet.correction)
        comparisonConfidenceLevel = 1 - set.design.alpha
        self.reference = reference.name
        let mature = variants.map(\.mature).reduce(0, +)
        let maturing = variants.map(\.maturing).reduce(0, +)
        let window = "\(experiment.windowDays) day\(experiment.windowDays == 1 ? "" : "s")"
        if exposed.reduce(0, +) == 0 {
            (readable, note) = (false, "No customer has been exposed yet.")
        } else if sampleRatio?.mismatch == true {
            (readable, note) = (false, "Sample ratio mismatch: the exposed customers are not split as the weights say (p < 0.001). Something assigns or exposes customers unevenly; do not read the results until it is found.")
        } else if mature == 0 {
            (readable, note) = (false, "No customer is mature yet (\(maturing) maturing): each counts \(window) after their exposure.")
        } else if experiment.metric == .revenue {
            (readable, note) = (true, "Realized revenue per mature customer over \(window), by currency; it has no interval: compare it beside the rates. \(maturing) customers are still maturing.")
        } else {
            let level = Self.percent(1 - set.design.alpha)
            let shared = comparisons.count == 1
                ? "The comparison is at \(level) (α = \(Self.percent(experiment.alpha)); with one comparison the Bonferroni correction leaves it whole)."
                : "α = \(Self.percent(experiment.alpha)) is shared among the \(comparisons.count) comparisons by the Bonferroni correction: each is at \(level)."
            (readable, note) = (true, "Over the \(mature) customers exposed at least \(window) ago (\(maturing) still maturing). The intervals are always valid: read them at any time, as often as you like. \(shared)")
        }
    }

    /// A comparison in words: "free is better than none on retained: +6.1 points (+1.2 to +11.0, 97.5 %)".
    static func summary(_ variant: String, _ against: String, _ interval: AlwaysValidInterval, metric: String, level: Double) -> String {
        let range = "\(points(interval.estimate)) points (\(points(interval.lower)) to \(points(interval.upper)), \(percent(level)))"
        switch ComparisonSet.verdict(interval) {
        case .better: return "\(variant) is better than \(against) on \(metric): \(range)."
        case .worse: return "\(variant) is worse than \(against) on \(metric): \(range)."
        case .noDifferenceYet: return "No difference found yet between \(variant) and \(against) on \(metric): \(range)."
        }
    }

    private static func points(_ value: Double) -> String {
        let text = String(format: "%.1f", value * 100)
        return value >= 0 ? "+" + text : text
    }

    private static func percent(_ value: Double) -> String {
        var text = String(format: "%.2f", value * 100)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + " %"
    }
}

extension ExperimentReport.Interval {
    init(_ interval: AlwaysValidInterval) {
        self.init(estimate: interval.estimate, lower: interval.lower, upper: interval.upper, excludesZero: interval.excludesZero)
    }
}
