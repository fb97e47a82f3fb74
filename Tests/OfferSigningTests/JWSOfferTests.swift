import Crypto
import Foundation
import JWTKit
import Testing

@testable import OfferSigning

@Suite struct JWSOfferTests {
    let key = try! SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
    let other = try! SigningKey.generate(keyIdentifier: "OTHERKEY01")
    let issuer = "57246542-96fe-1a63-e053-0824d011072a"

    private var ring: KeyRing {
        try! KeyRing(keys: [.init(key: key, source: "t"), .init(key: other, source: "t")], activeKeyIdentifier: "ABC123DEFG")
    }

    private func json(_ segment: Substring) throws -> [String: Any] {
        let data = try #require(Data(base64URLEncoded: segment))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    private func promotional(transactionId: String? = "2000000123456789") async throws -> SignedJWS<PromotionalOfferV2Claims> {
        try await JWSOfferSigner.signPromotionalOffer(
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            transactionId: transactionId,
            issuerIdentifier: issuer,
            key: key,
            nonce: UUID(uuidString: "7A0E1C2B-3D4E-4F50-8A6B-7C8D9E0F1A2B")!,
            issuedAt: Date(timeIntervalSince1970: 1_700_000_000.75)
        )
    }

    @Test func promotionalOfferHeaderAndClaimsAreExactlyAsSpecified() async throws {
        let signed = try await promotional()
        let parts = signed.token.split(separator: ".")
        #expect(parts.count == 3)
        let header = try json(parts[0])
        #expect(Set(header.keys) == ["alg", "kid", "typ"])
        #expect(header["alg"] as? String == "ES256")
        #expect(header["kid"] as? String == "ABC123DEFG")
        #expect(header["typ"] as? String == "JWT")
        let claims = try json(parts[1])
        #expect(Set(claims.keys) == ["iss", "bid", "aud", "iat", "nonce", "productId", "offerIdentifier", "transactionId"])
        #expect(claims["iss"] as? String == issuer)
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(claims["aud"] as? String == "promotional-offer")
        #expect(claims["nonce"] as? String == "7a0e1c2b-3d4e-4f50-8a6b-7c8d9e0f1a2b")
        #expect(claims["productId"] as? String == "com.example.monthly")
        #expect(claims["offerIdentifier"] as? String == "winback_50")
        #expect(claims["transactionId"] as? String == "2000000123456789")
        // iat: an integer number of seconds, written without a fraction.
        let rawClaims = String(decoding: try #require(Data(base64URLEncoded: parts[1])), as: UTF8.self)
        #expect(rawClaims.contains(#""iat":1700000000"#))
        #expect(!rawClaims.contains("1700000000."))
        // ES256 signature: raw r||s, 64 bytes.
        #expect(try #require(Data(base64URLEncoded: parts[2])).count == 64)
    }

    @Test func transactionIdIsOmittedWhenAbsent() async throws {
        let signed = try await promotional(transactionId: nil)
        let claims = try json(signed.token.split(separator: ".")[1])
        #expect(claims["transactionId"] == nil)
        #expect(await JWSOfferVerifier.verify(signed.token, keyRing: ring).valid)
    }

    @Test func introductoryOfferEligibilityClaimsAreExactlyAsSpecified() async throws {
        for allow in [true, false] {
            let signed = try await JWSOfferSigner.signIntroductoryOfferEligibility(
                bundleIdentifier: "com.example.app",
                productIdentifier: "com.example.monthly",
                allowIntroductoryOffer: allow,
                transactionId: "2000000123456789",
                issuerIdentifier: issuer,
                key: key
            )
            let claims = try json(signed.token.split(separator: ".")[1])
            #expect(Set(claims.keys) == ["iss", "bid", "aud", "iat", "nonce", "productId", "allowIntroductoryOffer", "transactionId"])
            #expect(claims["aud"] as? String == "introductory-offer-eligibility")
            #expect(claims["allowIntroductoryOffer"] as? Bool == allow)
            let nonce = try #require(claims["nonce"] as? String)
            #expect(nonce == nonce.lowercased() && UUID(uuidString: nonce) != nil)
            let verification = await JWSOfferVerifier.verify(signed.token, keyRing: ring)
            #expect(verification.valid)
            #expect(verification.claims?.allowIntroductoryOffer == allow)
        }
    }

    @Test func theSignatureVerifiesWithThePublicKeyAlone() async throws {
        let signed = try await promotional()
        let parts = signed.token.split(separator: ".")
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Data(base64URLEncoded: parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
    }

    @Test func aFreshTokenVerifiesWithWhatWasChecked() async throws {
        let signed = try await JWSOfferSigner.signPromotionalOffer(
            bundleIdentifier: "com.example.app",
            productIdentifier: "p",
            offerIdentifier: "o",
            transactionId: nil,
            issuerIdentifier: issuer,
            key: key
        )
        let result = await JWSOfferVerifier.verify(signed.token, keyRing: ring)
        #expect(result.valid)
        #expect(result.keyIdentifier == "ABC123DEFG")
        #expect(result.keyState == .active)
        #expect(result.claims?.aud == "promotional-offer")
        #expect(result.header?.alg == "ES256")
        #expect(result.validityWindow == "current")
    }

    private func replacing(_ token: String, part index: Int, with json: String) -> String {
        var parts = token.split(separator: ".").map(String.init)
        parts[index] = Data(json.utf8).base64URLEncodedString()
        return parts.joined(separator: ".")
    }

    @Test func aTamperedHeaderFails() async throws {
        let token = try await promotional().token
        let otherKid = replacing(token, part: 0, with: #"{"alg":"ES256","kid":"OTHERKEY01","typ":"JWT"}"#)
        #expect(await JWSOfferVerifier.verify(otherKid, keyRing: ring).reason == "signature_mismatch")
        let extended = replacing(token, part: 0, with: #"{"alg":"ES256","kid":"ABC123DEFG","typ":"JWT","cty":"x"}"#)
        #expect(await JWSOfferVerifier.verify(extended, keyRing: ring).reason == "signature_mismatch")
        let none = replacing(token, part: 0, with: #"{"alg":"none","kid":"ABC123DEFG","typ":"JWT"}"#)
        #expect(await JWSOfferVerifier.verify(none, keyRing: ring).reason == "unsupported_algorithm")
    }

    @Test func aTamperedPayloadFails() async throws {
        let token = try await promotional().token
        let tampered = replacing(
            token,
            part: 1,
            with:
                #"""
                {"iss":"x","bid":"com.example.app","aud":"promotional-offer","iat":1700000000,"nonce":"7a0e1c2b-3d4e-4f50-8a6b-7c8d9e0f1a2b",\#
                "productId":"com.example.monthly","offerIdentifier":"winback_99"}
                """#
        )
        #expect(await JWSOfferVerifier.verify(tampered, keyRing: ring).reason == "signature_mismatch")
    }

    @Test func aTamperedSignatureFails() async throws {
        let token = try await promotional().token
        var parts = token.split(separator: ".").map(String.init)
        var signature = try #require(Data(base64URLEncoded: parts[2]))
        signature[10] ^= 0x01
        parts[2] = signature.base64URLEncodedString()
        #expect(await JWSOfferVerifier.verify(parts.joined(separator: "."), keyRing: ring).reason == "signature_mismatch")
    }

    @Test("garbage is malformed", arguments: ["", "a.b", "a.b.c", "not a jws", "e30.e30."])
    func garbageIsMalformed(_ token: String) async {
        #expect(await JWSOfferVerifier.verify(token, keyRing: ring).reason == "malformed_jws")
    }

    @Test func unknownAndRevokedKeys() async throws {
        let stranger = try SigningKey.generate(keyIdentifier: "STRANGER01")
        let foreign = try await JWSOfferSigner.signPromotionalOffer(
            bundleIdentifier: "a",
            productIdentifier: "p",
            offerIdentifier: "o",
            transactionId: nil,
            issuerIdentifier: issuer,
            key: stranger
        )
        #expect(await JWSOfferVerifier.verify(foreign.token, keyRing: ring).reason == "unknown_key")
        let mine = try await promotional()
        let revoked = try KeyRing(
            keys: [.init(key: key, source: "t"), .init(key: other, source: "t")],
            activeKeyIdentifier: "OTHERKEY01",
            revokedKeyIdentifiers: ["ABC123DEFG"]
        )
        #expect(await JWSOfferVerifier.verify(mine.token, keyRing: revoked).reason == "key_revoked")
        #expect(
            await JWSOfferVerifier.verify(
                mine.token,
                keyRing: try KeyRing(keys: [.init(key: key, source: "t"), .init(key: other, source: "t")], activeKeyIdentifier: "OTHERKEY01")
            ).keyState == .retired
        )
    }

    /// Signs arbitrary claims with jwt-kit directly, to build tokens the service would never issue.
    private func signRaw(_ claims: [String: JWTHeaderField]) async throws -> String {
        struct Raw: JWTPayload {
            var fields: [String: JWTHeaderField]
            func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
            init(fields: [String: JWTHeaderField]) { self.fields = fields }
            init(from decoder: any Decoder) throws { fields = try [String: JWTHeaderField](from: decoder) }
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key.privateKey), kid: "ABC123DEFG")
        return try await keys.sign(Raw(fields: claims), kid: "ABC123DEFG", header: ["kid": "ABC123DEFG"])
    }

    @Test func wrongAudienceAndMissingOrMalformedClaimsAreReported() async throws {
        let base: [String: JWTHeaderField] = [
            "iss": .string(issuer), "bid": "com.example.app", "iat": .int(1_700_000_000), "nonce": "7a0e1c2b-3d4e-4f50-8a6b-7c8d9e0f1a2b",
            "productId": "p", "offerIdentifier": "o",
        ]
        var wrongAudience = base
        wrongAudience["aud"] = "appstoreconnect-v1"
        #expect(await JWSOfferVerifier.verify(try await signRaw(wrongAudience), keyRing: ring).reason == "wrong_audience")
        var noOffer = base
        noOffer["aud"] = "promotional-offer"
        noOffer["offerIdentifier"] = nil
        #expect(await JWSOfferVerifier.verify(try await signRaw(noOffer), keyRing: ring).reason == "invalid_claims")
        var fractional = base
        fractional["aud"] = "promotional-offer"
        fractional["iat"] = .decimal(1_700_000_000.5)
        #expect(await JWSOfferVerifier.verify(try await signRaw(fractional), keyRing: ring).reason == "invalid_claims")
        var upperNonce = base
        upperNonce["aud"] = "promotional-offer"
        upperNonce["nonce"] = "7A0E1C2B-3D4E-4F50-8A6B-7C8D9E0F1A2B"
        #expect(await JWSOfferVerifier.verify(try await signRaw(upperNonce), keyRing: ring).reason == "invalid_claims")
        var good = base
        good["aud"] = "promotional-offer"
        #expect(await JWSOfferVerifier.verify(try await signRaw(good), keyRing: ring).valid)
    }

    @Test func aFailedSelfCheckNeverReturnsTheToken() async throws {
        let claims = PromotionalOfferV2Claims(
            iss: issuer,
            bid: "a",
            iat: 1,
            nonce: "n",
            productIdentifier: "p",
            offerIdentifier: "o",
            transactionId: nil
        )
        let error = await #expect(throws: OfferSigningError.self) {
            try await JWSOfferSigner.sign(claims, with: key, selfCheckKey: other.publicKey)
        }
        #expect(error?.code == .selfCheckFailed)
    }

    @Test("bad transaction identifiers are refused", arguments: ["", "abc", "12 34", String(repeating: "1", count: 65)])
    func badTransactionIdentifiers(_ transactionId: String) async {
        let error = await #expect(throws: OfferSigningError.self) {
            try await JWSOfferSigner.signIntroductoryOfferEligibility(
                bundleIdentifier: "a",
                productIdentifier: "p",
                allowIntroductoryOffer: true,
                transactionId: transactionId,
                issuerIdentifier: issuer,
                key: key
            )
        }
        #expect(error?.field == "transactionId")
    }
}
