import Crypto
import Foundation
import Testing

@testable import OfferSigning

@Suite struct SigningKeyTests {
    @Test func pkcs8AndSEC1LoadTheSameKey() throws {
        let pkcs8 = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
        let sec1 = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.sec1P256)
        #expect(pkcs8.privateKey.rawRepresentation == sec1.privateKey.rawRepresentation)
    }

    @Test("fingerprint is SHA-256 of the SubjectPublicKeyInfo DER, as openssl computes it")
    func fingerprintMatchesOpenSSL() throws {
        let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
        #expect(key.fingerprint == KeyFixtures.fingerprintP256)
        let published = try VerificationKey(keyIdentifier: "ABC123DEFG", publicKeyPEM: KeyFixtures.publicKeyP256)
        #expect(published.fingerprint == KeyFixtures.fingerprintP256)
    }

    @Test func oneLinePEMWithEscapedNewlinesIsAccepted() throws {
        let oneLine = KeyFixtures.pkcs8P256.replacingOccurrences(of: "\n", with: "\\n")
        let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: oneLine)
        #expect(key.fingerprint == KeyFixtures.fingerprintP256)
    }

    @Test("pkcs8PEMRepresentation round-trips")
    func pemRoundTrip() throws {
        let key = try SigningKey.generate(keyIdentifier: "TEST000001")
        #expect(key.pkcs8PEMRepresentation.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let again = try SigningKey(keyIdentifier: "TEST000001", pemRepresentation: key.pkcs8PEMRepresentation)
        #expect(again.fingerprint == key.fingerprint)
    }

    static let refusals: [(String, String, String)] = [
        ("P-384 key", KeyFixtures.pkcs8P384, "P-384"),
        ("RSA key", KeyFixtures.pkcs8RSA, "not an EC P-256 private key"),
        ("Ed25519 key", KeyFixtures.pkcs8Ed25519, "not an EC P-256 private key"),
        ("encrypted key", KeyFixtures.encryptedPKCS8, "encrypted"),
        ("public key", KeyFixtures.publicKeyP256, "public key"),
        ("not PEM", "hello", "not a PEM document"),
        ("traditional RSA", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----", "RSA"),
    ]

    @Test("bad keys are refused naming the key ID, never echoing key material", arguments: refusals)
    func badKeysAreRefused(_ refusal: (String, String, String)) {
        let (_, pem, expected) = refusal
        let error = #expect(throws: OfferSigningError.self) {
            try SigningKey(keyIdentifier: "BADKEY0001", pemRepresentation: pem, source: "OFFER_SIGNER_KEY_BADKEY0001")
        }
        #expect(error?.code == .invalidKey)
        let message = error?.message ?? ""
        #expect(message.contains("BADKEY0001"))
        #expect(message.contains("OFFER_SIGNER_KEY_BADKEY0001"))
        #expect(message.contains(expected))
        // No line of base64 body from the PEM appears in the message.
        for line in pem.split(separator: "\n") where !line.hasPrefix("-----") && line.count > 8 {
            #expect(!message.contains(line))
        }
        #expect(!message.contains("-----END"))
    }

    @Test("key identifiers outside 1–64 letters, digits and _ are refused", arguments: ["", "has space", "a/b", String(repeating: "K", count: 65)])
    func invalidKeyIdentifiers(_ keyIdentifier: String) {
        #expect(throws: OfferSigningError.self) { try SigningKey.generate(keyIdentifier: keyIdentifier) }
    }

    @Test func descriptionHasNoKeyMaterial() throws {
        let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
        #expect(!"\(key)".contains(key.privateKey.rawRepresentation.base64EncodedString()))
        #expect("\(key)" == "SigningKey(ABC123DEFG, fingerprint: \(KeyFixtures.fingerprintP256))")
    }

    @Test func jsonWebKeyHoldsThePublicPoint() throws {
        let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
        let jwk = key.verificationKey.jsonWebKey
        #expect(jwk["kty"] == "EC" && jwk["crv"] == "P-256" && jwk["kid"] == "ABC123DEFG" && jwk["alg"] == "ES256")
        func decode(_ text: String?) throws -> Data {
            var base64 = try #require(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while base64.count % 4 != 0 { base64 += "=" }
            return try #require(Data(base64Encoded: base64))
        }
        let point = Data([0x04]) + (try decode(jwk["x"])) + (try decode(jwk["y"]))
        #expect(point == key.publicKey.x963Representation)
    }
}
