/// How many customers per variant an experiment needs to find a given lift of a rate: for the always-valid test
/// this package reports, and for a classical fixed-horizon test (looked at once) to compare.
///
/// With `p₀` the baseline rate, `p₁ = p₀ + lift`, `p̄ = (p₀ + p₁)/2`, `V₁ = p₀(1 − p₀) + p₁(1 − p₁)`,
/// `V* = max(p₀(1 − p₀), p̄(1 − p̄)) + max(p₁(1 − p₁), p̄(1 − p̄))` (the variances the difference's interval uses,
/// ``AlwaysValidInterval/difference(_:minus:design:)``) and `z_β = Φ⁻¹(power)`:
///
/// - Sequential: `n = ⌈(K + z_β)² V* / lift²⌉`, `K` = ``SequentialTestDesign/plannedMultiplier`` (3.035 at
///   α = 0.05). With the design tuned to this `n`, the interval's radius at `n` customers per variant is `K·√(V*/n)`,
///   so under the lift the interval excludes zero *at that one look* with probability `power` (normal
///   approximation); looks before it can only add to that, so the power of the whole sequential test is at least
///   `power`. The simulations in the tests measure it.
/// - Fixed horizon: `n = ⌈(z_{α/2} √(2 p̄(1 − p̄)) + z_β √V₁)² / lift²⌉` — the usual two-proportion
///   z-test formula; valid only if the results are looked at once, at `n`.
///
/// For 20 % → 25 % at α = 0.05 and power 0.8: 2,176 customers per variant (sequential) against 1,094 (fixed horizon).
///
/// The plan is for two variants of equal weight. An uneven split needs more customers in all for the same answer:
/// with shares `w` and `1 − w`, the variance of the difference is that of an equal split of `4w(1 − w)` times as
/// many customers, so a 10/90 split needs `1/(4 · 0.1 · 0.9)` ≈ 2.8 times the customers of a 50/50 one.
///
/// ## Usage
/// ```swift
/// let plan = try SampleSizePlan(baselineRate: 0.20, absoluteLift: 0.05)
/// plan.sequentialPerVariant   // 2176
/// let design = plan.design    // tune the report's intervals to it
/// ```
public struct SampleSizePlan: Sendable, Hashable {
    /// The control variant's expected rate, p₀.
    public let baselineRate: Double
    /// The lift to detect, p₁ − p₀ (percentage points as a fraction: 0.05 for five points); negative for a drop.
    public let absoluteLift: Double
    /// The error rate.
    public let alpha: Double
    /// The probability of finding the lift when it is there.
    public let power: Double
    /// Customers per variant for the always-valid test.
    public let sequentialPerVariant: Int
    /// Customers per variant for a fixed-horizon two-proportion z-test looked at once.
    public let fixedHorizonPerVariant: Int
    /// The design to compute the intervals with: α, narrowest at ``sequentialPerVariant``.
    public let design: SequentialTestDesign

    /// A plan for two variants of equal weight.
    ///
    /// - Parameters:
    ///   - baselineRate: Strictly between 0 and 1.
    ///   - absoluteLift: Not zero; `baselineRate + absoluteLift` strictly between 0 and 1.
    ///   - alpha: Strictly between 0 and 0.5.
    ///   - power: Strictly between 0.5 and 1.
    /// - Throws: ``ExperimentStatisticsError`` `parameter_out_of_range` (also when the answer exceeds 10¹² per variant).
    public init(
        baselineRate: Double,
        absoluteLift: Double,
        alpha: Double = 0.05,
        power: Double = 0.8
    )
        throws(ExperimentStatisticsError)
    {
        let treatmentRate = baselineRate + absoluteLift
        guard baselineRate.isFinite, baselineRate > 0, baselineRate < 1,
            absoluteLift.isFinite, absoluteLift != 0, treatmentRate > 0, treatmentRate < 1
        else {
            throw ExperimentStatisticsError(
                .parameterOutOfRange,
                "Baseline \(baselineRate) and lift \(absoluteLift): both rates must lie strictly between 0 and 1, and the lift must not be 0."
            )
        }
        guard alpha.isFinite, alpha > 0, alpha < 0.5, power.isFinite, power > 0.5, power < 1,
            let zPower = Distributions.normalQuantile(power),
            let zAlpha = Distributions.normalQuantile(1 - alpha / 2)
        else {
            throw ExperimentStatisticsError(
                .parameterOutOfRange,
                "α \(alpha) and power \(power): α must lie between 0 and 0.5, power between 0.5 and 1."
            )
        }
        let alternativeVariance = baselineRate * (1 - baselineRate) + treatmentRate * (1 - treatmentRate)
        let pooled = (baselineRate + treatmentRate) / 2
        let pooledVariance = pooled * (1 - pooled)
        // The variances the difference's interval will use: each variant's, but not below the pooled one.
        let intervalVariance =
            max(baselineRate * (1 - baselineRate), pooledVariance)
            + max(treatmentRate * (1 - treatmentRate), pooledVariance)
        let liftSquared = absoluteLift * absoluteLift
        let multiplier = try SequentialTestDesign(planningSampleSize: 1, alpha: alpha).plannedMultiplier
        let sequential = (multiplier + zPower) * (multiplier + zPower) * intervalVariance / liftSquared
        let fixedRoot = zAlpha * (2 * pooledVariance).squareRoot() + zPower * alternativeVariance.squareRoot()
        let fixed = fixedRoot * fixedRoot / liftSquared
        guard sequential <= 1e12, fixed <= 1e12 else {
            throw ExperimentStatisticsError(
                .parameterOutOfRange,
                "A lift of \(absoluteLift) needs more than 10¹² customers per variant; plan for a larger lift."
            )
        }
        self.baselineRate = baselineRate
        self.absoluteLift = absoluteLift
        self.alpha = alpha
        self.power = power
        self.sequentialPerVariant = Int(sequential.rounded(.up))
        self.fixedHorizonPerVariant = Int(fixed.rounded(.up))
        self.design = try SequentialTestDesign(planningSampleSize: sequentialPerVariant, alpha: alpha)
    }
}
