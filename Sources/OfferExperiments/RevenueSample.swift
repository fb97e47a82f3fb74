/// A variant's realized revenue in one currency, as sums over its customers: how many customers, the sum of each
/// customer's revenue, the sum of its squares and the largest — what the mean difference's interval needs
/// (docs/experiments.md "Realized revenue"). Customers who paid nothing in the currency count with 0.
///
/// Values are in any unit (the report uses milliunits); the interval is in the same unit.
public struct RevenueSample: Sendable, Hashable {
    /// Customers the mean is over (the variant's mature customers).
    public let customers: Int
    /// The sum of the customers' revenue.
    public let sum: Double
    /// The sum of each customer's revenue squared.
    public let sumOfSquares: Double
    /// The largest one customer's revenue.
    public let largest: Double

    /// A sample, checked: every figure finite and non-negative, the sum at most `customers × largest` and the
    /// squares consistent with it (within rounding).
    ///
    /// - Throws: ``ExperimentStatisticsError`` `invalid_count`.
    public init(customers: Int, sum: Double, sumOfSquares: Double, largest: Double) throws(ExperimentStatisticsError) {
        let finite = sum.isFinite && sumOfSquares.isFinite && largest.isFinite
        let tolerance = 1e-9 * max(1, sumOfSquares)
        guard customers >= 0, finite, sum >= 0, sumOfSquares >= 0, largest >= 0,
            sum <= Double(customers) * largest * (1 + 1e-12),
            sumOfSquares <= sum * largest + tolerance,
            customers > 0 || (sum == 0 && sumOfSquares == 0)
        else {
            throw ExperimentStatisticsError(
                .invalidCount,
                "A revenue sample of \(customers) customers with sum \(sum), squares \(sumOfSquares) "
                    + "and largest \(largest) is not possible: the figures must be non-negative and consistent."
            )
        }
        self.customers = customers
        self.sum = sum
        self.sumOfSquares = sumOfSquares
        self.largest = largest
    }

    /// `sum / customers`, or 0 without customers.
    public var mean: Double { customers == 0 ? 0 : sum / Double(customers) }

    /// The variance of the customers' revenue with two more customers, one at 0 and one at `top`: for revenue of
    /// 0 or 1 it is the rates' smoothed `p̃(1 − p̃)` exactly, and it is never zero while `top` is above 0.
    func smoothedVariance(top: Double) -> Double {
        let count = Double(customers) + 2
        let mean = (sum + top) / count
        return max(0, (sumOfSquares + top * top) / count - mean * mean)
    }
}

extension AlwaysValidInterval {
    /// The interval for the difference of two variants' mean revenue per customer, `treatment − control`, in the
    /// samples' unit.
    ///
    /// The same normal-mixture confidence sequence as ``difference(_:minus:design:)``, with each variant's variance
    /// estimated from its customers' revenue (plus one customer at 0 and one at the largest revenue of either
    /// variant) and never below the two variants' pooled variance. For revenue of 0 or 1 it is exactly the rates'
    /// interval. The guarantee is that of the normal approximation: it assumes a customer's revenue has a finite
    /// variance and no few customers dominate the sums — true of App Store prices, which are bounded, and checked
    /// by the package's simulations (A/A read daily over renewals at several prices).
    ///
    /// - Returns: The difference with its interval; unbounded (±infinity) around 0 while either sample has no
    ///   customers.
    public static func meanDifference(
        _ treatment: RevenueSample,
        minus control: RevenueSample,
        design: SequentialTestDesign
    ) -> AlwaysValidInterval {
        let level = 1 - design.alpha
        guard treatment.customers > 0, control.customers > 0 else {
            return AlwaysValidInterval(estimate: 0, lower: -.infinity, upper: .infinity, confidenceLevel: level)
        }
        let top = max(treatment.largest, control.largest)
        let pooled = try? RevenueSample(
            customers: treatment.customers + control.customers,
            sum: treatment.sum + control.sum,
            sumOfSquares: treatment.sumOfSquares + control.sumOfSquares,
            largest: top
        )
        let pooledVariance = pooled?.smoothedVariance(top: top) ?? 0
        let treatmentVariance = max(treatment.smoothedVariance(top: top), pooledVariance)
        let controlVariance = max(control.smoothedVariance(top: top), pooledVariance)
        let variance = treatmentVariance / Double(treatment.customers) + controlVariance / Double(control.customers)
        let planned = (treatmentVariance + controlVariance) / Double(design.planningSampleSize)
        let radius = design.radius(variance: variance, plannedVariance: planned)
        let estimate = treatment.mean - control.mean
        return AlwaysValidInterval(estimate: estimate, lower: estimate - radius, upper: estimate + radius, confidenceLevel: level)
    }
}

extension ComparisonSet {
    /// Each pair's difference of mean revenue (`samples` by variant index, one currency) with its always-valid
    /// interval at the corrected level. A report comparing `c` currencies makes a set of `pairs × c` comparisons.
    public func meanDifferences(_ samples: [RevenueSample]) -> [(pair: Pair, interval: AlwaysValidInterval)] {
        pairs.compactMap { pair in
            guard samples.indices.contains(pair.variant), samples.indices.contains(pair.against) else { return nil }
            return (pair, AlwaysValidInterval.meanDifference(samples[pair.variant], minus: samples[pair.against], design: design))
        }
    }
}
