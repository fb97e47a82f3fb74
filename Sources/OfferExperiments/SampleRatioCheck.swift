/// The sample-ratio-mismatch (SRM) check: do the exposed customers split across the variants as the weights say?
/// A mismatch means assignment or exposure recording is broken (a variant's exposures lost, a cache serving one
/// variant), and the experiment's results should not be trusted until it is explained.
///
/// Pearson's chi-square goodness-of-fit test: `χ² = Σ (observedᵢ − expectedᵢ)² / expectedᵢ` with
/// `expectedᵢ = total · weightᵢ / Σ weights`, `k − 1` degrees of freedom, and the p-value from
/// ``Distributions/chiSquareSurvival(_:degreesOfFreedom:)``. Flagged below p = 0.001, a threshold low enough that
/// checking every day for months rarely flags a sound experiment.
///
/// ## Usage
/// ```swift
/// let check = try SampleRatioCheck(observed: [5_200, 4_800], weights: [1, 1])
/// check.isMismatch   // true: p = 6.3e-5
/// ```
public struct SampleRatioCheck: Sendable, Hashable {
    /// The threshold below which the check flags a mismatch.
    public static let defaultThreshold = 0.001

    /// The chi-square statistic.
    public let chiSquare: Double
    /// Variants minus one.
    public let degreesOfFreedom: Int
    /// The probability of a split at least this uneven if assignment works; 1 with no customers or one variant.
    public let pValue: Double
    /// The threshold the p-value was compared with.
    public let threshold: Double

    /// Whether the split is too uneven to be chance: `pValue < threshold`.
    public var isMismatch: Bool { pValue < threshold }

    /// Checks observed exposures against the weights.
    ///
    /// - Parameters:
    ///   - observed: Customers exposed per variant; each zero or more.
    ///   - weights: The variants' weights in the same order; each greater than zero.
    ///   - threshold: Flag below this p-value; strictly between 0 and 1.
    /// - Throws: ``ExperimentStatisticsError`` `no_variants`, `count_mismatch`, `invalid_count`,
    ///   `weight_not_positive` or `parameter_out_of_range`.
    public init(
        observed: [Int],
        weights: [Int],
        threshold: Double = SampleRatioCheck.defaultThreshold
    )
        throws(ExperimentStatisticsError)
    {
        guard !observed.isEmpty else { throw ExperimentStatisticsError(.noVariants, "There are no variants to check.") }
        guard observed.count == weights.count else {
            throw ExperimentStatisticsError(
                .countMismatch,
                "\(observed.count) observed counts for \(weights.count) weights."
            )
        }
        if let negative = observed.first(where: { $0 < 0 }) {
            throw ExperimentStatisticsError(.invalidCount, "An observed count is \(negative); counts must be zero or more.")
        }
        guard weights.allSatisfy({ $0 > 0 }) else {
            throw ExperimentStatisticsError(.weightNotPositive, "Weights must be greater than zero.")
        }
        guard threshold.isFinite, threshold > 0, threshold < 1 else {
            throw ExperimentStatisticsError(.parameterOutOfRange, "The threshold is \(threshold); it must be between 0 and 1.")
        }
        // Sums in Double: no overflow, and exact up to 2⁵³ customers.
        let total = observed.reduce(0.0) { $0 + Double($1) }
        let weightTotal = weights.reduce(0.0) { $0 + Double($1) }
        var statistic = 0.0
        for (count, weight) in zip(observed, weights) {
            let expected = total * Double(weight) / weightTotal
            guard expected > 0 else { continue }
            let deviation = Double(count) - expected
            statistic += deviation * deviation / expected
        }
        self.chiSquare = statistic
        self.degreesOfFreedom = observed.count - 1
        self.threshold = threshold
        if total == 0 || observed.count == 1 {
            self.pValue = 1
        } else {
            self.pValue = Distributions.chiSquareSurvival(statistic, degreesOfFreedom: observed.count - 1) ?? 1
        }
    }
}
