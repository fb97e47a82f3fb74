import Foundation
import OfferApplication
import OfferEligibility
import OfferModel
import OfferStore
import Testing

/// ``ExperimentReporting`` over an in-memory fake of the ``ExperimentLog`` capability: which experiment, what its
/// report asks the log, and the exposures its summary adds up.
@Suite struct ExperimentReportingTests {
    let log = ExperimentMemoryLog()
    let policy: OfferPolicy

    init() throws {
        policy = try OfferPolicy(
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
                    metric: redeemed
                    plannedCustomers: 2000
                    variants:
                      - { name: half, offerIdentifier: half_off, weight: 1 }
                      - { name: none, holdout: true, weight: 1 }
                """
        )
    }

    var reporting: ExperimentReporting { ExperimentReporting(store: log, policies: PolicyHolder(PolicyInForce(policy: policy))) }

    @Test func anExperimentThePolicyDoesNotHaveIsUnknownExperiment() async throws {
        let error = await #expect(throws: OfferServiceError.self) { _ = try await reporting.experimentReport("e2") }
        #expect(error?.code == .unknownExperiment)
        #expect(log.outcomeQueries.isEmpty)
    }

    @Test func theReportAsksForEachVariantsOffersAndTheHoldoutForEveryOffer() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        _ = try? await reporting.experimentReport("e1", now: now)
        let query = try #require(log.outcomeQueries.first)
        let window = Int64(try #require(policy.experiment("e1")).windowDays) * 86_400_000
        #expect(query.experimentIdentifier == "e1" && query.bundleIdentifier == "com.example.app" && query.productIdentifier == "monthly")
        #expect(query.offers == ["half": ["half_off"], "none": ["half_off"]])
        #expect(query.window == window)
        #expect(query.matureAt == 1_800_000_000_000 - window)
        #expect(query.exposedBefore == nil)
    }

    @Test func withoutAStoreAReportIsStoreUnavailableAndSummariesCountNoExposure() async throws {
        let storeless = ExperimentReporting(store: nil, policies: PolicyHolder(PolicyInForce(policy: policy)))
        let error = await #expect(throws: OfferServiceError.self) { _ = try await storeless.experimentReport("e1") }
        #expect(error?.code == .storeUnavailable)
        #expect(try await storeless.experimentSummaries().map(\.exposed) == [0])
    }

    @Test func theSummaryAddsUpTheExposuresOfEveryVariant() async throws {
        for (index, variant) in ["half", "half", "none"].enumerated() {
            let customer = CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "user-\(index)")
            try await log.recordExposure(ExperimentExposure(experimentIdentifier: "e1", customer: customer, variant: variant, exposedAt: Date()))
        }
        let summaries = try await reporting.experimentSummaries()
        #expect(summaries.map(\.id) == ["e1"])
        #expect(summaries.first?.exposed == 3)
        #expect(summaries.first?.variants == ["half", "none"])
    }

    @Test func withoutAPolicyThereIsNoExperiment() async throws {
        let policyless = ExperimentReporting(store: log, policies: PolicyHolder(PolicyInForce(policy: nil)))
        #expect(try await policyless.experimentSummaries().isEmpty)
    }
}
