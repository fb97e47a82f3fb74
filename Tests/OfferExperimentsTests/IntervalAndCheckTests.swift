import OfferExperiments
import Testing

@Suite struct IntervalAndCheckTests {
    @Test func sampleRatioMismatchIsFlaggedAt52To48NotAt50Point3() throws {
        let skewed = try SampleRatioCheck(observed: [5_200, 4_800], weights: [1, 1])
        #expect(skewed.isMismatch)
        #expect(skewed.chiSquare == 16)
        let fine = try SampleRatioCheck(observed: [5_030, 4_970], weights: [50, 50])
        #expect(!fine.isMismatch)
        #expect(fine.degreesOfFreedom == 1)
    }

    @Test func sampleRatioFollowsUnequalWeights() throws {
        #expect(!(try SampleRatioCheck(observed: [2_500, 7_500], weights: [1, 3])).isMismatch)
        #expect(try SampleRatioCheck(observed: [5_000, 5_000], weights: [1, 3]).isMismatch)
    }

    @Test func sampleRatioWithoutCustomersOrWithOneVariantIsNotFlagged() throws {
        #expect(try SampleRatioCheck(observed: [0, 0], weights: [1, 1]).pValue == 1)
        #expect(try SampleRatioCheck(observed: [42], weights: [1]).pValue == 1)
        #expect(try SampleRatioCheck(observed: [Int.max, Int.max], weights: [Int.max, 1]).isMismatch)
    }

    @Test func sampleRatioRefusesBadInput() {
        #expect(throws: ExperimentStatisticsError.self) { try SampleRatioCheck(observed: [], weights: []) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleRatioCheck(observed: [1, 2], weights: [1]) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleRatioCheck(observed: [1, -2], weights: [1, 1]) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleRatioCheck(observed: [1, 2], weights: [1, 0]) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleRatioCheck(observed: [1, 2], weights: [1, 1], threshold: .nan) }
    }

    @Test func countsAreChecked() {
        #expect(throws: ExperimentStatisticsError.self) { try ConversionCount(successes: -1, trials: 5) }
        #expect(throws: ExperimentStatisticsError.self) { try ConversionCount(successes: 6, trials: 5) }
        #expect(throws: ExperimentStatisticsError.self) { try ConversionCount(successes: 0, trials: -1) }
    }

    @Test func emptyVariantsGiveTheWholeRange() throws {
        let design = try SequentialTestDesign(planningSampleSize: 1_000)
        let none = try ConversionCount(successes: 0, trials: 0)
        let some = try ConversionCount(successes: 3, trials: 10)
        #expect(AlwaysValidInterval.rate(none, design: design) == AlwaysValidInterval(estimate: 0, lower: 0, upper: 1, confidenceLevel: 0.95))
        let difference = AlwaysValidInterval.difference(some, minus: none, design: design)
        #expect(difference.lower == -1 && difference.upper == 1 && !difference.excludesZero)
    }

    @Test func noEventsYetIsNotADifference() throws {
        let design = try SequentialTestDesign(planningSampleSize: 1_000)
        let zero = try ConversionCount(successes: 0, trials: 200)
        #expect(!AlwaysValidInterval.difference(zero, minus: zero, design: design).excludesZero)
        #expect(AlwaysValidInterval.rate(zero, design: design).upper > 0)
    }

    @Test func intervalIsNarrowestAtThePlanningSizeInStandardErrors() throws {
        let design = try SequentialTestDesign(planningSampleSize: 2_000)
        #expect(abs(design.radiusInStandardErrors(planFraction: 1) - design.plannedMultiplier) < 1e-12)
        #expect(design.radiusInStandardErrors(planFraction: 0.9) > design.plannedMultiplier)
        #expect(design.radiusInStandardErrors(planFraction: 1.1) > design.plannedMultiplier)
        #expect(design.radiusInStandardErrors(planFraction: 0.01) > design.radiusInStandardErrors(planFraction: 0.1))
        #expect(design.radiusInStandardErrors(planFraction: 100) > design.radiusInStandardErrors(planFraction: 10))
        #expect(design.radiusInStandardErrors(planFraction: 0) == .infinity)
        #expect(design.plannedMultiplier > 1.96)
        // At the planning size, a difference of two equal variants is `plannedMultiplier` standard errors wide.
        let count = try ConversionCount(successes: 400, trials: 2_000)
        let interval = AlwaysValidInterval.difference(count, minus: count, design: design)
        let p = 401.0 / 2_002
        #expect(abs(interval.upper - design.plannedMultiplier * (2 * p * (1 - p) / 2_000).squareRoot()) < 1e-12)
    }

    @Test func intervalsShrinkAsCustomersArrive() throws {
        let design = try SequentialTestDesign(planningSampleSize: 2_000)
        var previous = Double.infinity
        for trials in stride(from: 100, through: 100_000, by: 900) {
            let interval = AlwaysValidInterval.rate(try ConversionCount(successes: trials / 4, trials: trials), design: design)
            #expect(interval.upper - interval.lower < previous)
            previous = interval.upper - interval.lower
        }
    }

    @Test func plansAndDesignsRefuseOutOfRangeParameters() {
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: 0, absoluteLift: 0.05) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: 0.2, absoluteLift: 0) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: 0.98, absoluteLift: 0.05) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: .nan, absoluteLift: 0.05) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: 0.2, absoluteLift: 0.05, power: 1) }
        #expect(throws: ExperimentStatisticsError.self) { try SampleSizePlan(baselineRate: 0.5, absoluteLift: 1e-9) }
        #expect(throws: ExperimentStatisticsError.self) { try SequentialTestDesign(planningSampleSize: 0) }
        #expect(throws: ExperimentStatisticsError.self) { try SequentialTestDesign(planningSampleSize: 10, alpha: 0.7) }
        #expect(Distributions.normalQuantile(0) == nil && Distributions.normalQuantile(1) == nil)
        #expect(Distributions.chiSquareSurvival(3, degreesOfFreedom: 0) == nil)
        #expect(Distributions.regularizedUpperGamma(-1, 3) == nil)
    }
}
