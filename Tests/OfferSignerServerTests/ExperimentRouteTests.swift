import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// An experiment seen by the app: its eligibility answer names the customer's variant, only that variant's offer is
/// signed, the others are refused with the experiment's reason, and every customer who asked is exposed once.
@Suite struct ExperimentRouteTests {
    struct Answer: Decodable {
        struct Entry: Decodable {
            var offerIdentifier: String
            var eligible: Bool
            var reasons: [EligibilityReason]
            var experiment: ExperimentMembership?
        }
        var offers: [Entry]
    }

    static func policy(bundle: String, experiment: String) -> String {
        """
        apps:
          - bundleIdentifier: \(bundle)
            products:
              - productIdentifier: monthly
                offers:
                  - offerIdentifier: half_off
                  - offerIdentifier: free_month
                  - offerIdentifier: sorry
        experiments:
          - id: \(experiment)
            productIdentifier: monthly
            variants:
              - { name: half, offerIdentifier: half_off, weight: 1 }
              - { name: free, offerIdentifier: free_month, weight: 1 }
              - { name: none, holdout: true, weight: 1 }
        """
    }

    @Test("eligibility, sign and exposure follow the customer's variant", arguments: StoreBackend.available)
    func variants(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.exp-\(suffix)", "winback-\(suffix)")
        let policy = try OfferPolicy(text: Self.policy(bundle: bundle, experiment: id))
        let experiment = try #require(policy.experiment(id))
        let service = SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
            policy: policy,
            store: store
        )
        var expected: [String: Int] = [:]
        for index in 0..<30 {
            expected[experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: "customer-\(index)")).name, default: 0] += 1
        }
        try await Application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), logger: Logger(label: "test"))
            .test(.router) { client in
                for index in 0..<30 {
                    let customer = "customer-\(index)"
                    let variant = experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: customer))
                    for _ in 0..<2 {  // asked twice, exposed once
                        let answer = try await client.post(
                            "/v1/offers/eligibility",
                            json: #"{"bundleIdentifier":"\#(bundle)","applicationUsername":"\#(customer)"}"#
                        )
                        .decode(Answer.self)
                        let byOffer = Dictionary(uniqueKeysWithValues: answer.offers.map { ($0.offerIdentifier, $0) })
                        #expect(byOffer["sorry"]?.eligible == true && byOffer["sorry"]?.experiment == nil)
                        for offer in ["half_off", "free_month"] {
                            let entry = try #require(byOffer[offer])
                            #expect(entry.experiment?.id == id && entry.experiment?.variant == variant.name)
                            #expect(entry.eligible == (variant.answer == offer))
                            if !entry.eligible {
                                #expect(entry.reasons.map(\.code) == [variant.isHoldout ? "experiment_holdout" : "experiment_variant"])
                            }
                        }
                    }
                    for offer in ["half_off", "free_month"] {
                        let signed = try await client.post(
                            "/v1/offers/sign",
                            json:
                                #"""
                                {"bundleIdentifier":"\#(bundle)","productIdentifier":"monthly","offerIdentifier":"\#(offer)",\#
                                "applicationUsername":"\#(customer)"}
                                """#
                        )
                        if variant.answer == offer {
                            #expect(signed.status == .ok)
                        } else {
                            #expect(signed.status == .forbidden)
                            #expect(
                                try signed.decode(RefusalBody.self).error.reasons?.map(\.code) == [
                                    variant.isHoldout ? "experiment_holdout" : "experiment_variant"
                                ]
                            )
                        }
                    }
                }
            }
        #expect(try await store.exposureCounts(experimentIdentifier: id) == expected)
        #expect(expected.count == 3)  // 30 customers reach every variant
        try await store.close()
    }
}
