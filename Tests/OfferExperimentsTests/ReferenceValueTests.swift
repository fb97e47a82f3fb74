import OfferExperiments
import Testing

/// Values printed by SciPy 1.17.1 (`scripts/stats-check.py`); the implementation must keep matching them.
@Suite struct ReferenceValueTests {
    private func close(_ actual: Double?, _ expected: Double, relative: Double = 1e-10) -> Bool {
        guard let actual else { return false }
        return abs(actual - expected) <= relative * max(abs(expected), 1e-300)
    }

    @Test(
        "chi2.sf",
        arguments: [
            (16.0, 1, 6.334248366623988e-05), (0.36, 1, 0.5485062355001471), (3.5, 2, 0.1737739434504451),
            (25.0, 4, 5.0309817823062075e-05), (100.0, 3, 1.5541594313896026e-21), (0.5, 10, 0.999993388289439),
            (200.0, 150, 0.003973185970821635), (1e-3, 1, 0.9747728793699604), (60.0, 1, 9.485737571073857e-15),
        ]
    )
    func chiSquareSurvival(_ statistic: Double, _ degrees: Int, _ expected: Double) {
        #expect(close(Distributions.chiSquareSurvival(statistic, degreesOfFreedom: degrees), expected))
    }

    @Test(
        "gammaincc",
        arguments: [
            (0.5, 0.1, 0.6547208460185768), (5.0, 3.0, 0.8152632445237722), (10.0, 20.0, 0.0049954123083075785),
            (2.5, 0.001, 0.9999999904914654), (100.0, 90.0, 0.84177901081357), (1.0, 50.0, 1.9287498479639183e-22),
        ]
    )
    func regularizedUpperGamma(_ a: Double, _ x: Double, _ expected: Double) {
        #expect(close(Distributions.regularizedUpperGamma(a, x), expected))
    }

    @Test(
        "gammaln",
        arguments: [
            (0.5, 0.5723649429247), (3.7, 1.428072326665388), (1000.5, 5908.674175848678), (0.01, 4.599479878042022),
        ]
    )
    func logGamma(_ x: Double, _ expected: Double) {
        #expect(close(Distributions.logGamma(x), expected, relative: 1e-13))
    }

    @Test("norm.cdf", arguments: [(-3.0, 0.0013498980316300933), (1.5, 0.9331927987311419), (-8.0, 6.22096057427174e-16)])
    func normalCDF(_ z: Double, _ expected: Double) {
        #expect(close(Distributions.normalCDF(z), expected, relative: 1e-12))
    }

    @Test(
        "norm.ppf",
        arguments: [
            (0.975, 1.959963984540054), (0.8, 0.8416212335729143), (1e-6, -4.753424308822899), (0.999999, 4.753424308817087),
        ]
    )
    func normalQuantile(_ p: Double, _ expected: Double) {
        #expect(close(Distributions.normalQuantile(p), expected, relative: 1e-12))
    }

    @Test(
        "chisquare(observed).pvalue for 50/50 and equal thirds",
        arguments: [
            ([5200, 4800], 6.334248366623988e-05), ([5030, 4970], 0.5485062355001471), ([3400, 3300, 3300], 0.36787944117144245),
        ]
    )
    func sampleRatioPValue(_ observed: [Int], _ expected: Double) throws {
        let check = try SampleRatioCheck(observed: observed, weights: observed.map { _ in 1 })
        #expect(close(check.pValue, expected))
    }

    @Test func designConstants() throws {
        let design = try SequentialTestDesign(planningSampleSize: 2_176)
        #expect(abs(design.optimalRatio - 0.12177348869865698) < 1e-12)
        #expect(abs(design.plannedMultiplier - 3.035122413028551) < 1e-12)
    }

    @Test(
        "sample sizes per variant (sequential, fixed horizon)",
        arguments: [
            (0.20, 0.05, 2176, 1094), (0.10, 0.02, 7647, 3841), (0.05, 0.01, 16288, 8158), (0.30, 0.05, 2687, 1377),
            (0.50, 0.10, 748, 388), (0.02, 0.01, 8037, 3826), (0.20, -0.05, 1830, 906), (0.05, 0.02, 4566, 2213),
            (0.10, 0.05, 1425, 686), (0.20, 0.02, 12681, 6510), (0.20, 0.10, 598, 294),
        ]
    )
    func sampleSizes(_ baseline: Double, _ lift: Double, _ sequential: Int, _ fixed: Int) throws {
        let plan = try SampleSizePlan(baselineRate: baseline, absoluteLift: lift)
        #expect(plan.sequentialPerVariant == sequential)
        #expect(plan.fixedHorizonPerVariant == fixed)
        #expect(plan.design.planningSampleSize == sequential)
    }

    @Test(
        "rate intervals at planning size 2,176",
        arguments: [
            (420, 2000, 0.21, 0.1837136762422272, 0.23894648050096715),
            (30, 100, 0.3, 0.13565235621162497, 0.5392401200292386),
            (0, 50, 0.0, 0.0, 0.43714382409925506),
            (50, 50, 1.0, 0.5628561759007449, 1.0),
        ]
    )
    func rateInterval(_ successes: Int, _ trials: Int, _ estimate: Double, _ lower: Double, _ upper: Double) throws {
        let interval = AlwaysValidInterval.rate(
            try ConversionCount(successes: successes, trials: trials),
            design: try SequentialTestDesign(planningSampleSize: 2_176)
        )
        #expect(interval.estimate == estimate)
        #expect(lower == 0 ? interval.lower == 0 : close(interval.lower, lower, relative: 1e-9))
        #expect(upper == 1 ? interval.upper == 1 : close(interval.upper, upper, relative: 1e-9))
    }

    @Test(
        "difference intervals at planning size 2,176",
        arguments: [
            (540, 2100, 420, 2090, 0.05618591934381406, 0.015969730948257446, 0.09640210773937068),
            (60, 300, 50, 310, 0.038709677419354854, -0.07459530643227193, 0.15201466127098162),
            (1300, 5000, 1000, 5000, 0.06, 0.03356170018137104, 0.08643829981862895),
        ]
    )
    func differenceInterval(
        _ sb: Int,
        _ nb: Int,
        _ sa: Int,
        _ na: Int,
        _ estimate: Double,
        _ lower: Double,
        _ upper: Double
    ) throws {
        let interval = AlwaysValidInterval.difference(
            try ConversionCount(successes: sb, trials: nb),
            minus: try ConversionCount(successes: sa, trials: na),
            design: try SequentialTestDesign(planningSampleSize: 2_176)
        )
        #expect(close(interval.estimate, estimate))
        #expect(close(interval.lower, lower, relative: 1e-9) && close(interval.upper, upper, relative: 1e-9))
    }

    @Test("Bonferroni: three comparisons each at α / 3, as stats-check.py recomputes them")
    func bonferroni() throws {
        let set = try ComparisonSet(variantCount: 3, reference: 0, allPairs: true, alpha: 0.05, planningSampleSize: 2_176)
        #expect(set.pairs.count == 3 && close(set.design.alpha, 0.05 / 3))
        #expect(abs(set.design.optimalRatio - 0.09395466282788374) < 1e-12)
        #expect(abs(set.design.plannedMultiplier - 3.412247252080612) < 1e-12)
        let counts = [
            try ConversionCount(successes: 420, trials: 2_090), try ConversionCount(successes: 540, trials: 2_100),
            try ConversionCount(successes: 1, trials: 10),
        ]
        let first = try #require(set.differences(counts).first)
        #expect(first.pair.variant == 1 && first.pair.against == 0)
        #expect(close(first.interval.estimate, 0.05618591934381406))
        #expect(close(first.interval.lower, 0.010973024013794727, relative: 1e-9) && close(first.interval.upper, 0.1013988146738334, relative: 1e-9))
    }
}
