import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferSignerServer
import OfferSigning
import Testing

struct JWSAnswer: Decodable {
    var format: String
    var bundleIdentifier: String
    var productIdentifier: String
    var offerIdentifier: String?
    var keyIdentifier: String
    var nonce: String
    var signature: String
    var allowIntroductoryOffer: Bool?
    var transactionId: String?
}

struct JWSVerifyAnswer: Decodable {
    struct Claims: Decodable {
        var aud: String?
        var bid: String?
        var iss: String?
        var productIdentifier: String?
        var allowIntroductoryOffer: Bool?
        enum CodingKeys: String, CodingKey {
            case aud, bid, iss
            case productIdentifier = "productId"
            case allowIntroductoryOffer
        }
    }
    var format: String
    var valid: Bool
    var reason: String?
    var keyIdentifier: String?
    var claims: Claims?
}

@Suite struct JWSRouteTests {
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    let key = try! SigningKey.generate(keyIdentifier: "TESTKEY001")

    private func application(
        issuer: String? = JWSRouteTests.issuer,
        decision: @escaping IntroductoryOfferDecision = IntroductoryOfferDecisions.allowWithoutPolicy
    ) throws -> some ApplicationProtocol {
        let service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: "com.example.app", issuerIdentifier: issuer)],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            introductoryOfferDecision: decision
        )
        return Application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), logger: Logger(label: "test"))
    }

    @Test func signWithFormatJWSReturnsAVerifiablePromotionalOfferJWS() async throws {
        try await application().test(.router) { client in
            let response = try await client.post(
                "/v1/offers/sign",
                json:
                    #"""
                    {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1","format":"jws",\#
                    "transactionId":"2000000123456789"}
                    """#
            )
            #expect(response.status == .ok)
            let answer = try response.decode(JWSAnswer.self)
            #expect(answer.format == "jws")
            #expect(answer.keyIdentifier == "TESTKEY001")
            #expect(answer.offerIdentifier == "winback_50")
            let contents = try #require(JWSOfferVerifier.decode(answer.signature))
            #expect(contents.claims.aud == "promotional-offer")
            #expect(contents.claims.iss == Self.issuer)
            #expect(contents.claims.bid == "com.example.app")
            #expect(contents.claims.transactionId == "2000000123456789")
            #expect(contents.claims.nonce == answer.nonce)

            let verified = try await client.post("/v1/offers/verify", json: "{\"signature\":\"\(answer.signature)\"}")
            let verification = try verified.decode(JWSVerifyAnswer.self)
            #expect(verification.format == "jws")
            #expect(verification.valid)
            #expect(verification.keyIdentifier == "TESTKEY001")
            #expect(verification.claims?.aud == "promotional-offer")

            // The sign answer exactly as returned verifies too (issue 24: it was read as a legacy bundle).
            let asReturned = try await client.post("/v1/offers/verify", json: response.text)
            #expect(asReturned.status == .ok, "\(asReturned.text)")
            let whole = try asReturned.decode(JWSVerifyAnswer.self)
            #expect(whole.format == "jws" && whole.valid)
            // Another format is refused, never read as a legacy bundle.
            let unknown = try await client.post(
                "/v1/offers/verify",
                json: response.text.replacingOccurrences(of: #""format":"jws""#, with: #""format":"xml""#)
            )
            #expect(unknown.status == .badRequest)
            #expect(try unknown.decode(ErrorBody.self).error.field == "format")
        }
    }

    @Test func introductoryEligibilityFollowsTheDecision() async throws {
        for allow in [true, false] {
            let decision: IntroductoryOfferDecision = { bundle, product, username in
                #expect(bundle == "com.example.app" && product == "com.example.monthly" && username == "user-1")
                return IntroductoryOfferVerdict(allow: allow, reason: allow ? "never had one" : "had one in this group")
            }
            try await application(decision: decision).test(.router) { client in
                let response = try await client.post(
                    "/v1/offers/introductory-eligibility",
                    json: #"{"productIdentifier":"com.example.monthly","transactionId":"2000000123456789","applicationUsername":"USER-1"}"#
                )
                #expect(response.status == .ok)
                let answer = try response.decode(JWSAnswer.self)
                #expect(answer.allowIntroductoryOffer == allow)
                let contents = try #require(JWSOfferVerifier.decode(answer.signature))
                #expect(contents.claims.aud == "introductory-offer-eligibility")
                #expect(contents.claims.allowIntroductoryOffer == allow)
                let verified = try await client.post("/v1/offers/verify", json: "{\"signature\":\"\(answer.signature)\"}")
                #expect(try verified.decode(JWSVerifyAnswer.self).valid)
            }
        }
    }

    @Test func anAppWithoutIssuerIDGetsAClear503AndNoToken() async throws {
        try await application(issuer: nil).test(.router) { client in
            let sign = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"jws"}"#
            )
            #expect(sign.status == .serviceUnavailable)
            let error = try sign.decode(ErrorBody.self).error
            #expect(error.code == "issuer_not_configured")
            #expect(error.message.contains("OFFER_SIGNER_ISSUER_ID"))
            let intro = try await client.post(
                "/v1/offers/introductory-eligibility",
                json: #"{"productIdentifier":"p","transactionId":"1","applicationUsername":"u"}"#
            )
            #expect(try intro.decode(ErrorBody.self).error.code == "issuer_not_configured")
            // Legacy still works.
            let legacy = try await client.post("/v1/offers/sign", json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u"}"#)
            #expect(legacy.status == .ok)
        }
    }

    @Test func badJWSRequestsNameTheField() async throws {
        try await application().test(.router) { client in
            let badTransaction = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"jws","transactionId":"abc"}"#
            )
            #expect(badTransaction.status == .badRequest)
            #expect(try badTransaction.decode(ErrorBody.self).error.field == "transactionId")
            let missing = try await client.post("/v1/offers/introductory-eligibility", json: #"{"productIdentifier":"p","applicationUsername":"u"}"#)
            #expect(try missing.decode(ErrorBody.self).error.field == "transactionId")
            let separator = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"p","offerIdentifier":"o\u2063","applicationUsername":"u","format":"jws"}"#
            )
            #expect(try separator.decode(ErrorBody.self).error.field == "offerIdentifier")
        }
    }

    @Test func aTamperedJWSIsInvalidOverHTTP() async throws {
        try await application().test(.router) { client in
            let response = try await client.post(
                "/v1/offers/sign",
                json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"jws"}"#
            )
            var parts = try response.decode(JWSAnswer.self).signature.split(separator: ".").map(String.init)
            parts[1] = Data(#"{"aud":"promotional-offer","productId":"p","offerIdentifier":"free_forever"}"#.utf8).base64URLEncodedString()
            let verified = try await client.post("/v1/offers/verify", json: "{\"signature\":\"\(parts.joined(separator: "."))\"}")
            let answer = try verified.decode(JWSVerifyAnswer.self)
            #expect(!answer.valid)
            #expect(answer.reason == "signature_mismatch")
        }
    }
}
