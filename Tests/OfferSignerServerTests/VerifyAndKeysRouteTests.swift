import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferApplication
import OfferSignerServer
import OfferSigning
import Testing

struct VerifyAnswer: Decodable {
    var format: String
    var valid: Bool
    var reason: String?
    var keyIdentifier: String
    var keyState: String?
    var payload: String
    var validityWindow: String
}

struct PublishedKey: Decodable {
    var keyIdentifier: String
    var state: String
    var fingerprint: String
    var publicKeyPEM: String
}

@Suite struct VerifyAndKeysRouteTests {
    private func encode(_ bundle: SignedLegacyOffer) throws -> String {
        String(decoding: try JSONEncoder().encode(bundle), as: UTF8.self)
    }

    @Test func aBundleFromSignVerifiesAndShowsThePayload() async throws {
        try await TestService().application.test(.router) { client in
            let signed = try await client.post("/v1/offers/sign", json: SignRouteTests.validBody)
            let bundle = try signed.decode(SignedLegacyOffer.self)
            let response = try await client.post("/v1/offers/verify", json: signed.text)
            #expect(response.status == .ok)
            let answer = try response.decode(VerifyAnswer.self)
            #expect(answer.valid)
            #expect(answer.format == "legacy")
            #expect(answer.keyState == "active")
            #expect(answer.validityWindow == "current")
            #expect(
                answer.payload
                    == """
                    com.example.app\\u2063TESTKEY001\\u2063com.example.monthly\\u2063winback_50\\u2063user-0001\\u2063\(bundle.nonce)\\u2063\
                    \(bundle.timestamp)
                    """
            )
        }
    }

    @Test func aTamperedBundleIsInvalidWith200() async throws {
        let test = try TestService()
        let offer = PromotionalOffer(bundleIdentifier: "com.example.app", productIdentifier: "p", offerIdentifier: "o", applicationUsername: "u")
        var bundle = try OfferSigner.signLegacy(offer, with: test.key)
        bundle.offerIdentifier = "o2"
        let tampered = try encode(bundle)
        try await test.application.test(.router) { client in
            let response = try await client.post("/v1/offers/verify", json: tampered)
            #expect(response.status == .ok)
            let answer = try response.decode(VerifyAnswer.self)
            #expect(!answer.valid)
            #expect(answer.reason == "signature_mismatch")
        }
    }

    @Test func aBundleOfAnUnknownKeyIsInvalid() async throws {
        let stranger = try SigningKey.generate(keyIdentifier: "STRANGER01")
        let offer = PromotionalOffer(bundleIdentifier: "com.example.app", productIdentifier: "p", offerIdentifier: "o", applicationUsername: "u")
        try await TestService().application.test(.router) { client in
            let response = try await client.post("/v1/offers/verify", json: try encode(try OfferSigner.signLegacy(offer, with: stranger)))
            #expect(try response.decode(VerifyAnswer.self).reason == "unknown_key")
        }
    }

    @Test func verifyWithAMissingFieldNamesIt() async throws {
        try await TestService().application.test(.router) { client in
            let response = try await client.post(
                "/v1/offers/verify",
                json: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","keyIdentifier":"K","nonce":"n","signature":"s"}"#
            )
            #expect(response.status == .badRequest)
            #expect(try response.decode(ErrorBody.self).error.field == "timestamp")
            let malformed = try await client.post("/v1/offers/verify", json: "nope")
            #expect(try malformed.decode(ErrorBody.self).error.code == "malformed_json")
        }
    }

    @Test func keysArePublishedWithStatesAndNoPrivateMaterial() async throws {
        let old = try SigningKey.generate(keyIdentifier: "OLDKEY0001")
        let new = try SigningKey.generate(keyIdentifier: "NEWKEY0001")
        try await TestService(keys: [old, new], active: "NEWKEY0001").application.test(.router) { client in
            let response = try await client.execute(uri: "/v1/keys", method: .get)
            #expect(response.status == .ok)
            let keys = try response.decode([PublishedKey].self)
            #expect(keys.map(\.keyIdentifier) == ["NEWKEY0001", "OLDKEY0001"])
            #expect(keys.map(\.state) == ["active", "retired"])
            #expect(keys[0].fingerprint == new.fingerprint)
            let published = try VerificationKey(keyIdentifier: "NEWKEY0001", publicKeyPEM: keys[0].publicKeyPEM)
            #expect(published.fingerprint == new.fingerprint)
            #expect(!response.text.contains("PRIVATE"))

            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
            struct Set: Decodable { var keys: [[String: String]] }
            let set = try jwks.decode(Set.self)
            #expect(Swift.Set(set.keys.compactMap { $0["kid"] }) == ["NEWKEY0001", "OLDKEY0001"])
            #expect(set.keys.allSatisfy { $0["d"] == nil })
        }
    }

    @Test func healthAndReadiness() async throws {
        try await TestService().application.test(.router) { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .ok)
            #expect(ready.text.contains("TESTKEY001"))
        }
    }
}
