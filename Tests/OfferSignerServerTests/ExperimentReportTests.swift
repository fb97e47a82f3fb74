import Foundation
import OfferApplication
import OfferEligibility
import OfferExperiments
import OfferModel
import Testing

/// The report's arithmetic over counts: rates and differences with always-valid intervals, the reference, the
/// sample-ratio check and whether the results may be read.
@Suite struct ExperimentReportTests {
    static func experiment(metric: String = "redeemed", holdout: Bool = true) throws -> OfferPolicy.Experiment {
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: com.example.app
                    products:
                      - productIdentifier: monthly
                        offers:
                          - offerIdentifier: half_off
                          - offerIdentifier: free_month
                experiments:
                  - id: e1
                    productIdentifier: monthly
                    metric: \(metric)
                    plannedCustomers: 2000
                    variants:
                      - { name: half, offerIdentifier: half_off, weight: 1 }
                      - \(holdout ? "{ name: none, holdout: true, weight: 1 }" : "{ name: free, offerIdentifier: free_month, weight: 1 }")
                """
        )
        return try #require(policy.experiment("e1"))
    }

    @Test("a clear lift is found against the holdout; the rates and the difference are the counts'")
    func lift() throws {
        let report = try ExperimentReport(
            experiment: try Self.experiment(),
            counts: [
                "half": ExperimentVariantCounts(exposed: 2_000, mature: 2_000, redeemed: 500, renewedAfterOffer: 300, revenue: ["USD": 2_495_000]),
                "none": ExperimentVariantCounts(exposed: 2_010, mature: 2_010, redeemed: 300),
            ],
            now: Date()
        )
        #expect(report.reference == "none" && report.readable)
        let half = try #require(report.variants.first { $0.name == "half" })
        #expect(half.rate?.estimate == 0.25)
        let difference = try #require(half.difference)
        #expect(abs(difference.estimate - (0.25 - 300.0 / 2_010)) < 1e-12)
        #expect(difference.excludesZero && difference.lower > 0)
        #expect(
            half.revenue.map(\.currency) == ["USD"] && half.revenue.map(\.milliunits) == [2_495_000]
                && half.revenue.map(\.perExposedCustomer) == [1_247.5]
        )
        #expect(report.variants.first { $0.name == "none" }?.difference == nil)
        #expect(report.sampleRatio?.mismatch == false)
    }

    @Test("no difference is declared for equal rates; an uneven split is flagged and not readable; nobody exposed is not readable")
    func nullAndMismatch() throws {
        let equal = try ExperimentReport(
            experiment: try Self.experiment(holdout: false),
            counts: [
                "half": ExperimentVariantCounts(exposed: 1_000, mature: 1_000, redeemed: 200),
                "free": ExperimentVariantCounts(exposed: 1_000, mature: 1_000, redeemed: 205),
            ],
            now: Date()
        )
        #expect(equal.reference == "half")
        #expect(equal.variants[1].difference?.excludesZero == false)
        let skewed = try ExperimentReport(
            experiment: try Self.experiment(),
            counts: [
                "half": ExperimentVariantCounts(exposed: 5_200, mature: 5_200), "none": ExperimentVariantCounts(exposed: 4_800, mature: 4_800),
            ],
            now: Date()
        )
        #expect(skewed.sampleRatio?.mismatch == true && !skewed.readable && skewed.note.hasPrefix("Sample ratio mismatch"))
        let empty = try ExperimentReport(experiment: try Self.experiment(), counts: [:], now: Date())
        #expect(!empty.readable && empty.sampleRatio == nil && empty.variants.allSatisfy { $0.exposed == 0 })
    }

    /// Three arms — half, free, and a holdout — compared on retention in pairs at α = 0.1.
    static func threeArms(comparisons: String) throws -> OfferPolicy.Experiment {
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: com.example.app
                    products:
                      - productIdentifier: monthly
                        offers:
                          - offerIdentifier: half_off
                          - offerIdentifier: free_month
                experiments:
                  - id: e3
                    productIdentifier: monthly
                    metric: retained
                    windowDays: 60
                    alpha: 0.1
                    comparisons: \(comparisons)
                    variants:
                      - { name: half, offerIdentifier: half_off, weight: 1 }
                      - { name: free, offerIdentifier: free_month, weight: 1 }
                      - { name: none, holdout: true, weight: 1 }
                """
        )
        return try #require(policy.experiment("e3"))
    }

    @Test("pairs: each offer against the holdout and the offers against each other, each at α / 3 (Bonferroni), verdicts in words")
    func pairs() throws {
        let experiment = try Self.threeArms(comparisons: "pairs")
        #expect(experiment.windowDays == 60 && experiment.alpha == 0.1 && experiment.comparisons == .pairs)
        let report = try ExperimentReport(
            experiment: experiment,
            counts: [
                "half": ExperimentVariantCounts(exposed: 1_100, mature: 1_000, retained: 600, revenue: ["USD": 4_990_000]),
                "free": ExperimentVariantCounts(exposed: 1_090, mature: 1_000, retained: 450),
                "none": ExperimentVariantCounts(exposed: 1_080, mature: 1_000, retained: 440),
            ],
            now: Date()
        )
        #expect(report.correction == "Bonferroni" && abs(report.comparisonConfidenceLevel - (1 - 0.1 / 3)) < 1e-12)
        #expect(report.comparisons.map { "\($0.variant)-\($0.against)" } == ["half-none", "free-none", "free-half"])
        #expect(report.comparisons.map(\.verdict) == [.better, .noDifferenceYet, .worse])
        #expect(report.comparisons[0].summary.hasPrefix("half is better than none on retained: +16.0 points"))
        #expect(report.comparisons[2].summary.hasPrefix("free is worse than half on retained: -15.0 points"))
        #expect(report.comparisons[1].summary.hasPrefix("No difference found yet between free and none"))
        let half = try #require(report.variants.first)
        #expect(half.rate?.estimate == 0.6 && half.mature == 1_000 && half.maturing == 100)
        #expect(half.revenue.first?.perExposedCustomer == 4_990)
        #expect(report.variants.map(\.maturing).reduce(0, +) == 270 && report.note.contains("270 still maturing"))
        // A Bonferroni interval is wider than one at α alone.
        let single = try ExperimentReport(
            experiment: try Self.threeArms(comparisons: "reference"),
            counts: [
                "half": ExperimentVariantCounts(exposed: 1_000, mature: 1_000, retained: 600),
                "none": ExperimentVariantCounts(exposed: 1_000, mature: 1_000, retained: 440),
                "free": ExperimentVariantCounts(exposed: 1_000, mature: 1_000, retained: 450),
            ],
            now: Date()
        )
        #expect(single.comparisons.count == 2 && abs(single.comparisonConfidenceLevel - 0.95) < 1e-12)
        let (wide, narrow) = (report.comparisons[0].difference, single.comparisons[0].difference)
        #expect(wide.upper - wide.lower > narrow.upper - narrow.lower)
    }

    @Test("nobody mature yet: not readable, the maturing counted; customers exposed but not mature are not in the rate")
    func maturing() throws {
        let report = try ExperimentReport(
            experiment: try Self.threeArms(comparisons: "reference"),
            counts: [
                "half": ExperimentVariantCounts(exposed: 40), "free": ExperimentVariantCounts(exposed: 41),
                "none": ExperimentVariantCounts(exposed: 39),
            ],
            now: Date()
        )
        #expect(!report.readable && report.note.contains("120 maturing") && report.note.contains("60 days"))
        #expect(report.variants.allSatisfy { $0.rate?.estimate == 0 && $0.mature == 0 })
    }

    @Test("policy: alpha, windowDays and comparisons are checked, with the line")
    func policyChecks() throws {
        for (field, value) in [
            ("alpha", "0.6"), ("alpha", "x"), ("windowDays", "0"), ("windowDays", "401"), ("comparisons", "all"), ("metric", "sold"),
        ] {
            #expect(throws: PolicyError.self, "\(field): \(value)") {
                try OfferPolicy(
                    text: """
                        apps:
                          - bundleIdentifier: com.example.app
                            products:
                              - productIdentifier: monthly
                                offers:
                                  - offerIdentifier: half_off
                        experiments:
                          - id: e4
                            productIdentifier: monthly
                            \(field): \(value)
                            variants:
                              - { name: half, offerIdentifier: half_off, weight: 1 }
                              - { name: none, holdout: true, weight: 1 }
                        """
                )
            }
        }
        let defaults = try Self.experiment()
        #expect(defaults.windowDays == 30 && defaults.alpha == 0.05 && defaults.comparisons == .reference)
    }

    @Test("revenue as the metric: compared per mature customer in each currency, Bonferroni over pairs and currencies")
    func revenue() throws {
        let detail = ExperimentVariantOutcome.RevenueDetail.init(payers:sumOfSquares:largest:)
        let report = try ExperimentReport(
            experiment: try Self.experiment(metric: "revenue"),
            counts: [
                "half": ExperimentVariantCounts(
                    exposed: 10,
                    mature: 10,
                    redeemed: 2,
                    revenue: ["EUR": 9_980, "USD": 4_990],
                    revenueDetail: ["EUR": detail(2, 2 * 4_990 * 4_990, 4_990), "USD": detail(1, 4_990 * 4_990, 4_990)]
                ),
                "none": ExperimentVariantCounts(exposed: 10, mature: 10),
            ],
            now: Date()
        )
        #expect(report.variants.allSatisfy { $0.rate == nil && $0.difference == nil })
        #expect(report.variants[0].revenue.map(\.currency) == ["EUR", "USD"] && report.variants[0].revenue.map(\.payers) == [2, 1])
        #expect(report.variants[0].revenue[0].perExposedCustomer == 998)
        #expect(report.comparisons.map(\.currency) == ["EUR", "USD"] && report.comparisonConfidenceLevel == 1 - 0.05 / 2)
        let design = try SequentialTestDesign(planningSampleSize: report.plannedCustomers, alpha: 0.05 / 2)
        let eur = AlwaysValidInterval.meanDifference(
            try RevenueSample(customers: 10, sum: 9_980, sumOfSquares: 2 * 4_990 * 4_990, largest: 4_990),
            minus: try RevenueSample(customers: 10, sum: 0, sumOfSquares: 0, largest: 0),
            design: design
        )
        let shown = report.comparisons[0].difference
        #expect(shown.estimate == eur.estimate && shown.lower == eur.lower && shown.upper == eur.upper && shown.excludesZero == eur.excludesZero)
        #expect(report.variants[0].revenue[0].difference == report.comparisons[0].difference)
        #expect(report.readable && report.note.contains("2 currencies") && report.note.contains("never summed across currencies"))
        #expect(report.comparisons[1].summary.contains("on revenue in USD: +0.50 USD per customer ("))
    }

    @Test("revenue as the metric: sums the store could not have given, or a variant with no mature customer, are not compared")
    func revenueNotComparable() throws {
        let report = try ExperimentReport(
            experiment: try Self.experiment(metric: "revenue"),
            counts: [
                "half": ExperimentVariantCounts(exposed: 10, mature: 10, revenue: ["USD": 4_990]),
                "none": ExperimentVariantCounts(exposed: 10, mature: 10),
            ],
            now: Date()
        )
        #expect(report.comparisons.isEmpty && !report.readable && report.note.hasPrefix("Nothing to compare yet"))
        let maturing = try ExperimentReport(
            experiment: try Self.experiment(metric: "revenue"),
            counts: [
                "half": ExperimentVariantCounts(
                    exposed: 10,
                    mature: 10,
                    revenue: ["USD": 4_990],
                    revenueDetail: ["USD": .init(payers: 1, sumOfSquares: 4_990 * 4_990, largest: 4_990)]
                ),
                "none": ExperimentVariantCounts(exposed: 10, mature: 0),
            ],
            now: Date()
        )
        #expect(maturing.comparisons.isEmpty)
        #expect(throws: Never.self) { try JSONEncoder().encode(maturing) }
    }
}
