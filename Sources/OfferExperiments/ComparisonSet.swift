public import Foundation

/// The window an experiment's metrics are read over (docs/experiments.md "Mature windows"): each customer's outcome
/// is what happened in the `days` after their own exposure, and a customer counts only once those days have passed —
/// so a late outcome (a renewal three months on) is never counted as a failure before it could happen, and what
/// happens after a window (after the experiment's end plus the window, at the latest) never counts.
public struct MetricWindow: Sendable, Hashable {
    /// Days after each exposure.
    public let days: Int

    /// A window of `days` (1 to 400).
    /// - Throws: ``ExperimentStatisticsError`` `parameter_out_of_range`.
    public init(days: Int) throws(ExperimentStatisticsError) {
        guard (1...400).contains(days) else {
            throw ExperimentStatisticsError(.parameterOutOfRange, "The window is \(days) days; it must be 1 to 400.")
        }
        self.days = days
    }

    /// The window's length in seconds.
    public var duration: TimeInterval { TimeInterval(days) * 86_400 }

    /// The latest exposure that is mature at `now`: customers exposed at or before it are counted.
    public func matureExposures(at now: Date) -> Date { now.addingTimeInterval(-duration) }

    /// Whether a customer exposed at `exposedAt` counts at `now`: exposed at least the window ago, and before the
    /// experiment's `end` (if it has one).
    public func isMature(exposedAt: Date, now: Date, end: Date?) -> Bool {
        exposedAt <= matureExposures(at: now) && (end.map { exposedAt < $0 } ?? true)
    }

    /// Whether an outcome at `at` of a customer exposed at `exposedAt` is inside their window.
    public func contains(_ at: Date, exposedAt: Date) -> Bool {
        at >= exposedAt && at < exposedAt.addingTimeInterval(duration)
    }
}

/// What a comparison found, in words a team reads.
public enum ComparisonVerdict: String, Sendable, Codable, Hashable, CaseIterable {
    /// The interval of the difference lies above zero.
    case better
    /// The interval of the difference lies below zero.
    case worse
    /// The interval holds zero: no difference is found yet (there may be one too small to see so far).
    case noDifferenceYet
}

/// The differences a report tests — each variant against the reference, and on request every other pair — with
/// the error rate corrected for their number by Bonferroni's rule: each interval is at level `1 − α/m` for `m`
/// comparisons, so the chance that *any* of them ever misses its true difference, at any number of looks, is at
/// most `α` (the union bound; always-valid intervals keep it across looks).
public struct ComparisonSet: Sendable, Hashable {
    /// One difference to test: `variant` minus `against`, by index.
    public struct Pair: Sendable, Hashable {
        public let variant: Int
        public let against: Int
    }

    /// The pairs, reference comparisons first (in variant order), then the other pairs (in variant order).
    public let pairs: [Pair]
    /// The error rate of the whole set.
    public let familyAlpha: Double
    /// How many differences each pair tests (the currencies a revenue metric is compared in; 1 for a rate).
    public let testsPerPair: Int
    /// The design each interval uses: `familyAlpha / (pairs.count × testsPerPair)`.
    public let design: SequentialTestDesign

    /// The comparisons of `variantCount` variants against the one at `reference`, and every other pair if
    /// `allPairs`; each pair tested `testsPerPair` times (once per currency for revenue).
    /// - Throws: ``ExperimentStatisticsError`` for fewer than two variants or an α or planning size out of range.
    public init(
        variantCount: Int,
        reference: Int,
        allPairs: Bool,
        alpha: Double,
        planningSampleSize: Int,
        testsPerPair: Int = 1
    ) throws(ExperimentStatisticsError) {
        guard (2...1_000).contains(variantCount), (0..<variantCount).contains(reference), (1...1_000).contains(testsPerPair) else {
            throw ExperimentStatisticsError(
                .noVariants,
                "A comparison needs 2 to 1,000 variants, a reference among them and 1 to 1,000 tests per pair."
            )
        }
        var pairs = (0..<variantCount).filter { $0 != reference }.map { Pair(variant: $0, against: reference) }
        if allPairs {
            let others = (0..<variantCount).filter { $0 != reference }
            for (position, first) in others.enumerated() {
                for second in others[(position + 1)...] { pairs.append(Pair(variant: second, against: first)) }
            }
        }
        self.pairs = pairs
        self.familyAlpha = alpha
        self.testsPerPair = testsPerPair
        self.design = try SequentialTestDesign(planningSampleSize: planningSampleSize, alpha: alpha / Double(pairs.count * testsPerPair))
    }

    /// The correction's name, as the report and docs say it.
    public static let correction = "Bonferroni"

    /// The verdict of a difference's interval.
    public static func verdict(_ interval: AlwaysValidInterval) -> ComparisonVerdict {
        interval.lower > 0 ? .better : interval.upper < 0 ? .worse : .noDifferenceYet
    }

    /// Each pair's difference of rates (`counts` by variant index) with its always-valid interval at the corrected
    /// level.
    public func differences(_ counts: [ConversionCount]) -> [(pair: Pair, interval: AlwaysValidInterval)] {
        pairs.compactMap { pair in
            guard counts.indices.contains(pair.variant), counts.indices.contains(pair.against) else { return nil }
            return (pair, AlwaysValidInterval.difference(counts[pair.variant], minus: counts[pair.against], design: design))
        }
    }
}
