import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferSignerServer
import OfferSigning
import Testing

struct EligibilityAnswer: Decodable {
    struct Entry: Decodable {
        var productIdentifier: String
        var offerIdentifier: String
        var eligible: Bool
        var reasons: [EligibilityReason]
    }
    var applicationUsername: String
    var policyInForce: Bool
    var offers: [Entry]
}

struct RefusalBody: Decodable {
    struct Detail: Decodable {
        var code: String
        var message: String
        var reasons: [EligibilityReason]?
    }
    var error: Detail
}

@Suite struct EligibilityRouteTests {
    static let policy = """
        apps:
          - bundleIdentifier: com.example.app
            products:
              - productIdentifier: com.example.monthly
                offers:
                  - offerIdentifier: open_to_all
                  - offerIdentifier: winback_50
                    rules:
                      - app-store-subscriber
                      - lapsed: { minDays: 30 }
              - productIdentifier: com.example.yearly
                offers:
                  - offerIdentifier: vip
                    rules:
                      - customers: { allow: [vip-1] }
        """

    private func application() throws -> some ApplicationProtocol {
        let service = SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
            policy: try OfferPolicy(text: Self.policy)
        )
        return Application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), logger: Logger(label: "test"))
    }

    @Test func offersThePolicyDoesNotListAre404() async throws {
        try await application().test(.router) { client in
            let product = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"com.example.weekly","offerIdentifier":"x","applicationUsername":"u"}"#
            )
            #expect(product.status == .notFound)
            #expect(try product.decode(ErrorBody.self).error.code == "unknown_product")
            let offer = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"x","applicationUsername":"u"}"#
            )
            #expect(offer.status == .notFound)
            #expect(try offer.decode(ErrorBody.self).error.code == "unknown_offer")
            let app = try await client.post(
                "/v1/offers/sign",
                json: #"{"bundleIdentifier":"com.other","productIdentifier":"com.example.monthly","offerIdentifier":"x","applicationUsername":"u"}"#
            )
            #expect(try app.decode(ErrorBody.self).error.code == "unknown_app")
        }
    }

    @Test func aCustomerWhoIsNotEligibleGets403WithReasons() async throws {
        try await application().test(.router) { client in
            for format in ["legacy", "jws"] {
                let response = try await client.post(
                    "/v1/offers/sign",
                    json:
                        #"""
                        {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"stranger",\#
                        "format":"\#(format)"}
                        """#
                )
                if format == "jws" && response.status == .serviceUnavailable { continue }  // no issuer ID in this policy
                #expect(response.status == .forbidden)
                let error = try response.decode(RefusalBody.self).error
                #expect(error.code == "not_eligible")
                #expect(error.reasons?.map(\.code) == ["never_subscribed", "not_lapsed"])
                #expect(error.reasons?.first?.rule == "app-store-subscriber")
            }
            let open = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"open_to_all","applicationUsername":"stranger"}"#
            )
            #expect(open.status == .ok)
        }
    }

    @Test func eligibilityListsEveryOfferWithItsDecision() async throws {
        try await application().test(.router) { client in
            let all = try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"VIP-1"}"#)
            #expect(all.status == .ok)
            let answer = try all.decode(EligibilityAnswer.self)
            #expect(answer.policyInForce)
            #expect(answer.applicationUsername == "vip-1")
            #expect(answer.offers.map(\.offerIdentifier) == ["open_to_all", "winback_50", "vip"])
            #expect(answer.offers.map(\.eligible) == [true, false, true])
            #expect(answer.offers[1].reasons.map(\.code) == ["never_subscribed", "not_lapsed"])

            let one = try await client.post(
                "/v1/offers/eligibility",
                json: #"{"applicationUsername":"someone","productIdentifier":"com.example.yearly"}"#
            )
            let yearly = try one.decode(EligibilityAnswer.self)
            #expect(yearly.offers.map(\.offerIdentifier) == ["vip"])
            #expect(yearly.offers[0].reasons.map(\.code) == ["customer_not_allowed"])

            let unknown = try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"someone","productIdentifier":"nope"}"#)
            #expect(try unknown.decode(ErrorBody.self).error.code == "unknown_product")
            let missing = try await client.post("/v1/offers/eligibility", json: #"{}"#)
            #expect(try missing.decode(ErrorBody.self).error.field == "applicationUsername")
        }
    }

    @Test func withoutAPolicyEligibilitySaysSoAndEverythingIsSigned() async throws {
        try await TestService().application.test(.router) { client in
            let answer = try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"u"}"#).decode(EligibilityAnswer.self)
            #expect(!answer.policyInForce)
            #expect(answer.offers.isEmpty)
        }
    }
}
