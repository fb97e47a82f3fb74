import Foundation
import OfferApplication
import OfferEligibility
import OfferModel
import Testing

/// The report's arithmetic over counts: rates and differences with always-valid intervals, the reference, the
/// sample-ratio check and whether the results may be read.
@Suite struct ExperimentReportTests {
    static func experiment(metric: String = "redeemed", holdout: Bool = true) throws -> OfferPolicy.Experiment {
        let policy = try OfferPolicy(text: """
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
            """)
        return try #require(policy.experiment("e1"))
    }

    @Test("a clear lift is found against the holdout; the rates and the difference are the counts'")
    func lift() throws {
        let report = try ExperimentReport(experiment: try Self.experiment(), counts: [
            "half": ExperimentVariantCounts(exposed: 2_000, redeemed: 500, renewedAfterOffer: 300, revenue: ["USD": 2_495_000]),
            "none": ExperimentVariantCounts(exposed: 2_010, redeemed: 300),
        ], now: Date())
        #expect(report.reference == "none" && report.readable)
        let half = try #require(report.variants.first { $0.name == "half" })
        #expect(half.rate?.estimate == 0.25)
        let difference = try #require(half.difference)
        #expect(abs(difference.estimate - (0.25 - 300.0 / 2_010)) < 1e-12)
        #expect(difference.excludesZero && difference.lower > 0)
        #expect(half.revenue.map(\.currency) == ["USD"] && half.revenue.map(\.milliunits) == [2_495_000] && half.revenue.map(\.perExposedCustomer) == [1_247.5])
        #expect(report.variants.first { $0.name == "none" }?.difference == nil)
        #expect(report.sampleRatio?.mismatch == false)
    }

    @Test("no difference is declared for equal rates; an uneven split is flagged and not readable; nobody exposed is not readable")
    func nullAndMismatch() throws {
        let equal = try ExperimentReport(experiment: try Self.experiment(holdout: false), counts: [
            "half": ExperimentVariantCounts(exposed: 1_000, redeemed: 200), "free": ExperimentVariantCounts(exposed: 1_000, redeemed: 205),
        ], now: Date())
        #expect(equal.reference == "half")
        #expect(equal.variants[1].difference?.excludesZero == false)
        let skewed = try ExperimentReport(experiment: try Self.experiment(), counts: [
            "half": ExperimentVariantCounts(exposed: 5_200), "none": ExperimentVariantCounts(exposed: 4_800),
        ], now: Date())
        #expect(skewed.sampleRatio?.mismatch == true && !skewed.readable && skewed.note.hasPrefix("Sample ratio mismatch"))
        let empty = try ExperimentReport(experiment: try Self.experiment(), counts: [:], now: Date())
        #expect(!empty.readable && empty.sampleRatio == nil && empty.variants.allSatisfy { $0.exposed == 0 })
    }

    @Test("revenue as the metric: no interval, revenue per exposed customer")
    func revenue() throws {
        let report = try ExperimentReport(experiment: try Self.experiment(metric: "revenue"), counts: [
            "half": ExperimentVariantCounts(exposed: 10, redeemed: 2, revenue: ["EUR": 9_980, "USD": 4_990]), "none": ExperimentVariantCounts(exposed: 10),
        ], now: Date())
        #expect(report.variants.allSatisfy { $0.rate == nil && $0.difference == nil })
        #expect(report.variants[0].revenue.map(\.currency) == ["EUR", "USD"])
        #expect(report.variants[0].revenue[0].perExposedCustomer == 998)
    }
}
