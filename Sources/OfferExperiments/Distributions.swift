#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The distribution functions the experiment statistics rest on, in plain Swift over the C math library.
///
/// Their values are checked against SciPy in the tests (`scripts/stats-check.py` prints the reference values).
public enum Distributions {
    /// The standard normal distribution function Φ(z) = P(Z ≤ z), as `erfc(-z/√2)/2` (accurate in both tails).
    ///
    /// - Parameter z: Any value; NaN gives NaN.
    /// - Returns: A probability in [0, 1].
    public static func normalCDF(_ z: Double) -> Double {
        0.5 * erfc(-z / 2.0.squareRoot())
    }

    /// The standard normal quantile Φ⁻¹(p): Acklam's rational approximation refined by one Halley step, which
    /// brings it to about 1e-15 relative error.
    ///
    /// - Parameter probability: A probability strictly between 0 and 1.
    /// - Returns: `z` with Φ(z) = `probability`; `nil` when `probability` is outside (0, 1) or not finite.
    public static func normalQuantile(_ probability: Double) -> Double? {
        guard probability.isFinite, probability > 0, probability < 1 else { return nil }
        let a = [
            -39.696_830_286_653_76, 220.946_098_424_520_5, -275.928_510_446_968_7, 138.357_751_867_269,
            -30.664_798_066_147_16, 2.506_628_277_459_239,
        ]
        let b = [
            -54.476_098_798_224_06, 161.585_836_858_040_9, -155.698_979_859_886_6, 66.801_311_887_719_72,
            -13.280_681_552_885_72,
        ]
        let c = [
            -0.007_784_894_002_430_293, -0.322_396_458_041_136_5, -2.400_758_277_161_838, -2.549_732_539_343_734,
            4.374_664_141_464_968, 2.938_163_982_698_783,
        ]
        let d = [0.007_784_695_709_041_462, 0.322_467_129_070_039_8, 2.445_134_137_142_996, 3.754_408_661_907_416]
        let low = 0.024_25
        var x: Double
        if probability < low || probability > 1 - low {
            let q = (-2 * log(min(probability, 1 - probability))).squareRoot()
            x =
                (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
                / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
            if probability > 1 - low { x = -x }
        } else {
            let q = probability - 0.5
            let r = q * q
            x =
                (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
                / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
        }
        // One Halley step on Φ(x) − p (in the upper tail on the complement, to keep its digits).
        let error = probability > 0.5 ? (1 - probability) - normalCDF(-x) : normalCDF(x) - probability
        let u = error * (2 * Double.pi).squareRoot() * exp(x * x / 2)
        return x - u / (1 + x * u / 2)
    }

    /// The chi-square survival function P(X ≥ `statistic`) for `degreesOfFreedom` degrees of freedom: the
    /// regularized upper incomplete gamma function Q(k/2, x/2).
    ///
    /// - Parameters:
    ///   - statistic: The chi-square statistic; zero or less gives 1.
    ///   - degreesOfFreedom: At least 1.
    /// - Returns: The p-value, or `nil` when `degreesOfFreedom` is below 1 or `statistic` is NaN.
    public static func chiSquareSurvival(_ statistic: Double, degreesOfFreedom: Int) -> Double? {
        guard degreesOfFreedom >= 1, !statistic.isNaN else { return nil }
        return regularizedUpperGamma(Double(degreesOfFreedom) / 2, statistic / 2)
    }

    /// The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a): its power series below `x = a + 1`
    /// (Q = 1 − P) and Legendre's continued fraction (modified Lentz) above, as in Numerical Recipes §6.2, with
    /// ``logGamma(_:)`` for Γ(a).
    ///
    /// - Parameters:
    ///   - a: The shape, greater than 0.
    ///   - x: Zero or more; `+infinity` gives 0.
    /// - Returns: Q(a, x) in [0, 1], or `nil` when `a` is not positive or either argument is NaN.
    public static func regularizedUpperGamma(_ a: Double, _ x: Double) -> Double? {
        guard a > 0, a.isFinite, !x.isNaN else { return nil }
        if x <= 0 { return 1 }
        if x == .infinity { return 0 }
        let logPrefix = -x + a * log(x) - logGamma(a)
        if x < a + 1 {
            var term = 1 / a
            var sum = term
            var denominator = a
            for _ in 0..<10_000 {
                denominator += 1
                term *= x / denominator
                sum += term
                if abs(term) < abs(sum) * 1e-17 { break }
            }
            return max(0, min(1, 1 - sum * exp(logPrefix)))
        }
        let tiny = 1e-300
        var b = x + 1 - a
        var c = 1 / tiny
        var d = 1 / b
        var fraction = d
        for step in 1..<10_000 {
            let an = -Double(step) * (Double(step) - a)
            b += 2
            d = an * d + b
            if abs(d) < tiny { d = tiny }
            c = b + an / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let delta = d * c
            fraction *= delta
            if abs(delta - 1) < 1e-16 { break }
        }
        return max(0, min(1, exp(logPrefix) * fraction))
    }

    /// ln Γ(x) for x > 0: the Lanczos approximation (g = 7, nine coefficients; about 1e-15 relative error), with the
    /// reflection formula below 1/2.
    ///
    /// - Parameter x: Greater than 0.
    /// - Returns: ln Γ(x); NaN when `x` is not positive.
    public static func logGamma(_ x: Double) -> Double {
        guard x > 0 else { return .nan }
        if x < 0.5 { return log(Double.pi / sin(Double.pi * x)) - logGamma(1 - x) }
        let coefficients = [
            0.999_999_999_999_809_93, 676.520_368_121_885_1, -1_259.139_216_722_402_8,
            771.323_428_777_653_13, -176.615_029_162_140_59, 12.507_343_278_686_905,
            -0.138_571_095_265_720_12, 9.984_369_578_019_571_6e-6, 1.505_632_735_149_311_6e-7,
        ]
        let z = x - 1
        var series = coefficients[0]
        for index in 1..<coefficients.count { series += coefficients[index] / (z + Double(index)) }
        let t = z + 7.5
        return 0.5 * log(2 * Double.pi) + (z + 0.5) * log(t) - t + log(series)
    }
}
