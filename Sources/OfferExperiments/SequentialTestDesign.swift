#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The tuning of the always-valid intervals: the error rate α and the planning sample size per variant at which the
/// intervals are made narrowest.
///
/// The intervals are normal-mixture confidence sequences, the inversion of the mixture sequential probability ratio
/// test (mSPRT) of Robbins (1970) as used for A/B tests by Johari, Koomen, Pekelis and Walsh, "Peeking at A/B
/// tests" (KDD 2017) and Johari, Pekelis and Walsh, "Always valid inference" (Operations Research 70(3), 2022), in
/// the form of Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence
/// sequences" (Annals of Statistics 49(2), 2021). For an estimate with variance `V`, mixing over the effect with a
/// normal prior of variance `τ²`, the radius is
///
///     r = √( 2 V (V + τ²) / τ² · ln( √((V + τ²) / V) / α ) ) = √( V (1 + x) ln((1 + x) / (x α²)) ),  x = V / τ².
///
/// With `V = σ²/n` and `ρ = σ⁴/τ²` this is the familiar `√( 2(nσ² + ρ)/n² · ln( √((nσ² + ρ)/ρ) / α ) )`.
/// The design fixes `τ²` as the variance the estimate will have at the planning sample size divided by
/// ``optimalRatio`` — the `x` that minimises `(1 + x) ln((1 + x)/(x α²))` — so the interval is narrowest there,
/// in standard errors: the radius is ``plannedMultiplier`` times `√V` at the planning size, against 1.96 times for a
/// fixed-horizon interval at α = 0.05. Before it the multiplier is larger; after it, it grows only slowly (like
/// `√ln n`), so the interval itself keeps shrinking (like `√(ln n / n)`). The guarantee holds whatever the
/// planning size; it only decides where the interval is sharpest.
public struct SequentialTestDesign: Sendable, Hashable {
    /// The probability that an interval ever, at any of any number of looks, misses the true value.
    public let alpha: Double
    /// The sample size per variant at which the intervals are narrowest. For two variants planned to reach
    /// different sizes (a small holdout), the harmonic mean `2 / (1/n₁ + 1/n₂)` of the two: the size of an equal
    /// split with the same variance of the difference.
    public let planningSampleSize: Int
    /// `V/τ²` at the planning sample size: the minimiser of `(1 + x) ln((1 + x)/(x α²))` (0.1218 for α = 0.05).
    public let optimalRatio: Double
    /// The radius in standard errors at the planning sample size (3.035 for α = 0.05).
    public let plannedMultiplier: Double

    /// A design for error rate `alpha`, narrowest at `planningSampleSize` customers per variant.
    ///
    /// - Parameters:
    ///   - planningSampleSize: Customers per variant; at least 1 (``SampleSizePlan`` computes one).
    ///   - alpha: Strictly between 0 and 0.5; 0.05 gives 95 % intervals.
    /// - Throws: ``ExperimentStatisticsError`` `parameter_out_of_range`.
    public init(planningSampleSize: Int, alpha: Double = 0.05) throws(ExperimentStatisticsError) {
        guard planningSampleSize >= 1 else {
            throw ExperimentStatisticsError(
                .parameterOutOfRange,
                "The planning sample size is \(planningSampleSize); it must be at least 1."
            )
        }
        guard alpha.isFinite, alpha > 0, alpha < 0.5 else {
            throw ExperimentStatisticsError(.parameterOutOfRange, "α is \(alpha); it must be between 0 and 0.5.")
        }
        self.alpha = alpha
        self.planningSampleSize = planningSampleSize
        let ratio = Self.minimisingRatio(alpha: alpha)
        self.optimalRatio = ratio
        self.plannedMultiplier = Self.multiplier(ratio: ratio, alpha: alpha).squareRoot()
    }

    /// The radius of the interval for an estimate whose variance is `variance` now and would be `plannedVariance`
    /// at the planning sample size (same per-customer variances).
    func radius(variance: Double, plannedVariance: Double) -> Double {
        guard variance > 0, plannedVariance > 0 else { return 0 }
        return variance.squareRoot() * radiusInStandardErrors(planFraction: plannedVariance / variance)
    }

    /// How many standard errors the interval's radius is when the estimate has `planFraction` times the information
    /// it will have at the planning sample size (for one rate, or two variants of equal weight: `n / planningSampleSize`).
    ///
    /// - Parameter planFraction: Greater than 0; the radius is narrowest, ``plannedMultiplier``, at 1.
    /// - Returns: The multiplier `√((1 + x) ln((1 + x)/(x α²)))` with `x = optimalRatio / planFraction`; infinity for
    ///   a fraction of 0 or less.
    public func radiusInStandardErrors(planFraction: Double) -> Double {
        guard planFraction > 0 else { return .infinity }
        return Self.multiplier(ratio: optimalRatio / planFraction, alpha: alpha).squareRoot()
    }

    /// `(1 + x) ln((1 + x)/(x α²))`, the squared radius in units of the variance.
    private static func multiplier(ratio x: Double, alpha: Double) -> Double {
        (1 + x) * (log1p(x) - log(x) - 2 * log(alpha))
    }

    /// The root of the derivative `ln((1 + x)/(x α²)) − 1/x`, which increases in `x`, by bisection.
    private static func minimisingRatio(alpha: Double) -> Double {
        var low = 1e-9
        var high = 1.0
        for _ in 0..<200 {
            let middle = (low + high) / 2
            if log1p(middle) - log(middle) - 2 * log(alpha) - 1 / middle < 0 { low = middle } else { high = middle }
        }
        return (low + high) / 2
    }
}
