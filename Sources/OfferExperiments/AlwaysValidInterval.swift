/// A variant's outcome so far: of `trials` exposed customers, `successes` met the metric (redeemed, renewed).
public struct ConversionCount: Sendable, Hashable {
    /// Customers who met the metric.
    public let successes: Int
    /// Customers exposed.
    public let trials: Int

    /// A count, checked.
    ///
    /// - Parameters:
    ///   - successes: Zero or more, at most `trials`.
    ///   - trials: Zero or more.
    /// - Throws: ``ExperimentStatisticsError`` `invalid_count`.
    public init(successes: Int, trials: Int) throws(ExperimentStatisticsError) {
        guard trials >= 0, successes >= 0, successes <= trials else {
            throw ExperimentStatisticsError(
                .invalidCount,
                "\(successes) successes of \(trials) trials: counts must be non-negative and successes at most trials."
            )
        }
        self.successes = successes
        self.trials = trials
    }

    /// `successes / trials`, or 0 with no trials.
    public var rate: Double { trials == 0 ? 0 : Double(successes) / Double(trials) }

    /// The per-customer variance used by the difference's interval: `p̃(1 − p̃)` with `p̃ = (successes + 1)/(trials + 2)`,
    /// so that a variant with no successes yet (or only successes) does not get a zero-width interval.
    var varianceEstimate: Double {
        let smoothed = (Double(successes) + 1) / (Double(trials) + 2)
        return smoothed * (1 - smoothed)
    }
}

/// A 1 − α always-valid (sequential) confidence interval: the probability that it misses the true value at *any*
/// time it is looked at — every day, after every customer — is at most α, so watching the results does not
/// inflate false positives. See ``SequentialTestDesign`` for the method and its references.
///
/// A rate's interval uses the variance each candidate rate implies (the score form); a difference's estimates each
/// variant's variance from the data (a plug-in, as Johari et al. do), never below the pooled variance. Either way
/// the guarantee is that of the normal approximation, which the package's simulations check: thousands of A/A
/// experiments looked at every 100 customers, at rates from 2 % to 20 % and splits of 50/50 and 90/10.
///
/// ## Usage
/// ```swift
/// let design = try SampleSizePlan(baselineRate: 0.20, absoluteLift: 0.05).design
/// let lift = AlwaysValidInterval.difference(
///     try ConversionCount(successes: 540, trials: 2_100), minus: try ConversionCount(successes: 420, trials: 2_090),
///     design: design)
/// if lift.excludesZero { /* the variants differ */ }
/// ```
public struct AlwaysValidInterval: Sendable, Hashable {
    /// The point estimate: a rate, or a difference of rates.
    public let estimate: Double
    /// The lower end (a rate's interval is kept within [0, 1], a difference's within [−1, 1]).
    public let lower: Double
    /// The upper end.
    public let upper: Double
    /// The confidence level, 1 − α.
    public let confidenceLevel: Double

    /// An interval from its parts (no checks: a value to compare in tests, or to decode).
    public init(estimate: Double, lower: Double, upper: Double, confidenceLevel: Double) {
        self.estimate = estimate
        self.lower = lower
        self.upper = upper
        self.confidenceLevel = confidenceLevel
    }

    /// Whether zero lies outside the interval — for a difference, whether the variants differ at level α.
    public var excludesZero: Bool { lower > 0 || upper < 0 }

    /// The interval for one variant's rate: the rates `p` with `|p̂ − p| ≤ M·√(p(1 − p)/n)`, `M` the design's
    /// multiplier after `n` trials — the normal mixture with the variance each candidate rate implies (the Wilson
    /// score form), which keeps its level with few events where `p̂(1 − p̂)` would not.
    ///
    /// - Parameters:
    ///   - count: The variant's successes and trials.
    ///   - design: α and the planning sample size.
    /// - Returns: The rate with its interval; [0, 1] around 0 while `count` has no trials.
    public static func rate(_ count: ConversionCount, design: SequentialTestDesign) -> AlwaysValidInterval {
        let level = 1 - design.alpha
        guard count.trials > 0 else { return AlwaysValidInterval(estimate: 0, lower: 0, upper: 1, confidenceLevel: level) }
        let trials = Double(count.trials)
        let estimate = count.rate
        let multiplier = design.radiusInStandardErrors(planFraction: trials / Double(design.planningSampleSize))
        let zSquaredOverN = multiplier * multiplier / trials
        let center = (estimate + zSquaredOverN / 2) / (1 + zSquaredOverN)
        let half = (zSquaredOverN * (estimate * (1 - estimate) + zSquaredOverN / 4)).squareRoot() / (1 + zSquaredOverN)
        return AlwaysValidInterval(
            estimate: estimate,
            lower: max(0, center - half),
            upper: min(1, center + half),
            confidenceLevel: level
        )
    }

    /// The interval for the difference of two variants' rates, `treatment − control`.
    ///
    /// - Parameters:
    ///   - treatment: The variant compared.
    ///   - control: The variant compared with (the holdout, or the first variant).
    ///   - design: α and the planning sample size.
    /// - Returns: The difference with its interval; [−1, 1] around 0 while either count has no trials.
    public static func difference(
        _ treatment: ConversionCount,
        minus control: ConversionCount,
        design: SequentialTestDesign
    ) -> AlwaysValidInterval {
        let level = 1 - design.alpha
        guard treatment.trials > 0, control.trials > 0 else {
            return AlwaysValidInterval(estimate: 0, lower: -1, upper: 1, confidenceLevel: level)
        }
        // Each variant's variance, but never below that of the two variants pooled: with few events in a small
        // variant its own estimate is too low (0 of 300 is not a rate of 0), and that made A/A tests with a 5 %
        // holdout declare differences more often than α.
        let pooled =
            (Double(treatment.successes) + Double(control.successes) + 1)
            / (Double(treatment.trials) + Double(control.trials) + 2)
        let pooledVariance = pooled * (1 - pooled)
        let treatmentVariance = max(treatment.varianceEstimate, pooledVariance)
        let controlVariance = max(control.varianceEstimate, pooledVariance)
        let variance = treatmentVariance / Double(treatment.trials) + controlVariance / Double(control.trials)
        let planned = (treatmentVariance + controlVariance) / Double(design.planningSampleSize)
        let radius = design.radius(variance: variance, plannedVariance: planned)
        let estimate = treatment.rate - control.rate
        return AlwaysValidInterval(
            estimate: estimate,
            lower: max(-1, estimate - radius),
            upper: min(1, estimate + radius),
            confidenceLevel: level
        )
    }
}
