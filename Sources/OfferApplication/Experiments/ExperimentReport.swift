public import Foundation
public import OfferEligibility
public import OfferExperiments
public import OfferModel

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
        /// Mature customers whose revenue in the currency is above 0.
        public var payers: Int
        /// `milliunits` divided by the variant's mature customers.
        public var perExposedCustomer: Double
        /// With `metric: revenue`: this variant's revenue per mature customer minus the reference's, milliunits, at
        /// the corrected level (absent for the reference and other metrics).
        public var difference: Interval?
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
        /// The primary metric's rate among the mature (absent for `revenue`, compared in ``Revenue/difference``), at the
        /// experiment's level `1 − alpha`.
        public var rate: Interval?
        /// This variant's rate minus the reference's at the corrected level (absent for the reference and `revenue`).
        public var difference: Interval?
    }

    /// One difference tested: `variant` minus `against` on the primary metric, at the corrected level.
    public struct Comparison: Sendable, Codable, Hashable {
        public var variant: String
        public var against: String
        /// With `metric: revenue`, the currency compared: `difference` is then in milliunits per mature customer
        /// (a rate's difference otherwise, absent here).
        public var currency: String?
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
    /// The differences tested (`comparisons: reference` or `pairs`); for `revenue`, those pairs in each currency.
    public var comparisons: [Comparison]
    public var sampleRatio: SampleRatio?
    /// Whether the results may be read now, and why (or why not), in plain words.
    public var readable: Bool
    public var note: String

    /// The API's names: the App Store's `bundleId` and `productId`.
    enum CodingKeys: String, CodingKey {
        case id
        case bundleIdentifier = "bundleId"
        case productIdentifier = "productId"
        case channel, metric, running, start, end, plannedCustomers
        case windowDays, alpha, confidenceLevel, correction, comparisonConfidenceLevel, reference, variants, comparisons, sampleRatio
        case readable, note
    }

    /// The report of `experiment` from its variants' counts (a variant not in `counts` exposed nobody).
    public init(experiment: OfferPolicy.Experiment, counts: [String: ExperimentVariantCounts], now: Date) throws(OfferServiceError) {
        let referenceIndex = experiment.variants.firstIndex(where: \.isHoldout) ?? 0
        func count(_ name: String) -> ExperimentVariantCounts { counts[name] ?? ExperimentVariantCounts(exposed: 0) }
        // Revenue is compared in each currency any variant was paid in, each a test of its own in the correction.
        let currencies =
            experiment.metric == .revenue
            ? Set(experiment.variants.flatMap { count($0.name).revenue.keys }).sorted() : []
        let set: ComparisonSet
        let design: SequentialTestDesign
        do {
            set = try ComparisonSet(
                variantCount: experiment.variants.count,
                reference: referenceIndex,
                allPairs: experiment.comparisons == .pairs,
                alpha: experiment.alpha,
                planningSampleSize: experiment.plannedCustomers,
                testsPerPair: max(currencies.count, 1)
            )
            design = try SequentialTestDesign(planningSampleSize: experiment.plannedCustomers, alpha: experiment.alpha)
        } catch {
            throw OfferServiceError.invalidRequest(field: "plannedCustomers", error.message)
        }
        let reference = experiment.variants[referenceIndex]
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
                comparisons.append(
                    Comparison(
                        variant: variant,
                        against: against,
                        difference: Interval(interval),
                        verdict: ComparisonSet.verdict(interval),
                        summary: Self.summary(variant, against, interval, metric: experiment.metric.rawValue, level: level)
                    )
                )
            }
        }
        var revenueDifferences: [Int: [String: Interval]] = [:]
        for currency in currencies {
            let samples = experiment.variants.compactMap { Self.revenueSample(count($0.name), currency: currency) }
            guard samples.count == experiment.variants.count, samples.allSatisfy({ $0.customers > 0 }) else { continue }
            let level = 1 - set.design.alpha
            for (pair, interval) in set.meanDifferences(samples) {
                let (variant, against) = (experiment.variants[pair.variant].name, experiment.variants[pair.against].name)
                if pair.against == referenceIndex { revenueDifferences[pair.variant, default: [:]][currency] = Interval(interval) }
                comparisons.append(
                    Comparison(
                        variant: variant,
                        against: against,
                        currency: currency,
                        difference: Interval(interval),
                        verdict: ComparisonSet.verdict(interval),
                        summary: Self.revenueSummary(variant, against, interval, currency: currency, level: level)
                    )
                )
            }
        }
        self.variants = experiment.variants.enumerated().map { index, variant in
            let counts = count(variant.name)
            let mature = max(counts.mature, 0)
            return Variant(
                name: variant.name,
                answer: variant.answer,
                holdout: variant.isHoldout,
                weight: variant.weight,
                exposed: counts.exposed,
                mature: mature,
                maturing: max(counts.exposed - mature, 0),
                redeemed: counts.redeemed,
                renewedAfterOffer: counts.renewedAfterOffer,
                converted: counts.converted,
                retained: counts.retained,
                revenue: counts.revenue.keys.sorted().map { currency in
                    let milliunits = counts.revenue[currency] ?? 0
                    return Revenue(
                        currency: currency,
                        milliunits: milliunits,
                        payers: counts.revenueDetail[currency]?.payers ?? 0,
                        perExposedCustomer: mature == 0 ? 0 : Double(milliunits) / Double(mature),
                        difference: revenueDifferences[index]?[currency]
                    )
                },
                rate: conversions[index].map { Interval(AlwaysValidInterval.rate($0, design: design)) },
                difference: differences[index]
            )
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
            (readable, note) = (
                false,
                """
                Sample ratio mismatch: the exposed customers are not split as the weights say (p < 0.001). Something assigns or exposes \
                customers unevenly; do not read the results until it is found.
                """
            )
        } else if mature == 0 {
            (readable, note) = (false, "No customer is mature yet (\(maturing) maturing): each counts \(window) after their exposure.")
        } else if experiment.metric == .revenue && comparisons.isEmpty {
            (readable, note) = (
                false,
                """
                Nothing to compare yet (\(maturing) maturing): realized revenue is compared in each currency once every variant has a mature \
                customer and one of them has paid in it.
                """
            )
        } else {
            let level = Self.percent(1 - set.design.alpha)
            let (pairs, inCurrencies) = (set.pairs.count, currencies.count)
            let tests =
                currencies.isEmpty
                ? "" : " (\(pairs) pair\(pairs == 1 ? "" : "s") in \(inCurrencies) currenc\(inCurrencies == 1 ? "y" : "ies"))"
            let shared =
                comparisons.count == 1
                ? """
                The comparison is at \(level) (α = \(Self.percent(experiment.alpha)); with one comparison the Bonferroni correction leaves it \
                whole).
                """
                : "α = \(Self.percent(experiment.alpha)) is shared among the \(comparisons.count) comparisons\(tests) by the Bonferroni correction: "
                    + "each is at \(level)."
            let revenue =
                currencies.isEmpty
                ? "" : " Realized revenue is compared per mature customer in each currency, never summed across currencies."
            (readable, note) = (
                true,
                """
                Over the \(mature) customers exposed at least \(window) ago (\(maturing) still maturing). The intervals are always valid: read \
                them at any time, as often as you like. \(shared)\(revenue)
                """
            )
        }
    }

    /// A comparison in words: "free is better than none on retained: +6.1 points (+1.2 to +11.0, 97.5 %)".
    static func summary(_ variant: String, _ against: String, _ interval: AlwaysValidInterval, metric: String, level: Double) -> String {
        let range = "\(points(interval.estimate)) points (\(points(interval.lower)) to \(points(interval.upper)), \(percent(level)))"
        return verdictSentence(variant, against, interval, on: metric, range: range)
    }

    /// A revenue comparison in words: "half is better than none on revenue in USD: +1.25 USD per customer (+0.40 to
    /// +2.10, 97.5 %)".
    static func revenueSummary(_ variant: String, _ against: String, _ interval: AlwaysValidInterval, currency: String, level: Double) -> String {
        let range = "\(money(interval.estimate)) \(currency) per customer (\(money(interval.lower)) to \(money(interval.upper)), \(percent(level)))"
        return verdictSentence(variant, against, interval, on: "revenue in \(currency)", range: range)
    }

    /// The verdict of `interval` in a sentence: "`variant` is better than `against` on `metric`: `range`."
    private static func verdictSentence(
        _ variant: String,
        _ against: String,
        _ interval: AlwaysValidInterval,
        on metric: String,
        range: String
    ) -> String {
        switch ComparisonSet.verdict(interval) {
        case .better: "\(variant) is better than \(against) on \(metric): \(range)."
        case .worse: "\(variant) is worse than \(against) on \(metric): \(range)."
        case .noDifferenceYet: "No difference found yet between \(variant) and \(against) on \(metric): \(range)."
        }
    }

    /// What a variant's counts say of its revenue in `currency` per mature customer; `nil` when the counts are not
    /// consistent (no detail for a sum).
    static func revenueSample(_ counts: ExperimentVariantCounts, currency: String) -> RevenueSample? {
        let detail = counts.revenueDetail[currency]
        return try? RevenueSample(
            customers: max(counts.mature, 0),
            sum: Double(counts.revenue[currency] ?? 0),
            sumOfSquares: detail?.sumOfSquares ?? 0,
            largest: Double(detail?.largest ?? 0)
        )
    }

    /// Milliunits as currency units, signed: "+1.25".
    private static func money(_ milliunits: Double) -> String {
        let text = String(format: "%.2f", milliunits / 1_000)
        return milliunits >= 0 ? "+" + text : text
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
