import Foundation
import Testing

@testable import OfferSigning

@Suite struct LegacyOfferVerifierTests {
    let old = try! SigningKey.generate(keyIdentifier: "OLDKEY0001")
    let new = try! SigningKey.generate(keyIdentifier: "NEWKEY0001")
    let offer = PromotionalOffer(
        bundleIdentifier: "com.example.app",
        productIdentifier: "com.example.monthly",
        offerIdentifier: "winback_50",
        applicationUsername: "user-1"
    )

    private func ring(revoked: Set<String> = []) throws -> KeyRing {
        try KeyRing(
            keys: [.init(key: old, source: "t"), .init(key: new, source: "t")],
            activeKeyIdentifier: "NEWKEY0001",
            revokedKeyIdentifiers: revoked
        )
    }

    @Test func aFreshBundleIsValidAndCurrent() throws {
        let bundle = try OfferSigner.signLegacy(offer, with: new)
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring())
        #expect(result.valid)
        #expect(result.reason == nil)
        #expect(result.keyState == .active)
        #expect(result.validityWindow == "current")
        #expect(result.payload == bundle.payload.displayString)
    }

    @Test func aRetiredKeyStillVerifies() throws {
        let bundle = try OfferSigner.signLegacy(offer, with: old)
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring())
        #expect(result.valid)
        #expect(result.keyState == .retired)
    }

    @Test func aRevokedKeyNoLongerVerifies() throws {
        let bundle = try OfferSigner.signLegacy(offer, with: old)
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring(revoked: ["OLDKEY0001"]))
        #expect(!result.valid)
        #expect(result.reason == "key_revoked")
    }

    @Test func anUnknownKeyIsReported() throws {
        let stranger = try SigningKey.generate(keyIdentifier: "STRANGER01")
        let result = LegacyOfferVerifier.verify(try OfferSigner.signLegacy(offer, with: stranger), keyRing: try ring())
        #expect(!result.valid)
        #expect(result.reason == "unknown_key")
    }

    static let tamperings: [(String, @Sendable (inout SignedLegacyOffer) -> Void)] = [
        ("bundleIdentifier", { $0.bundleIdentifier = "com.example.other" }),
        ("productIdentifier", { $0.productIdentifier = "com.example.yearly" }),
        ("offerIdentifier", { $0.offerIdentifier = "winback_60" }),
        ("applicationUsername", { $0.applicationUsername = "user-2" }),
        ("nonce", { $0.nonce = UUID().uuidString.lowercased() }),
        ("timestamp", { $0.timestamp += 1 }),
        ("keyIdentifier", { $0.keyIdentifier = "OLDKEY0001" }),
    ]

    @Test("changing any field breaks the signature", arguments: tamperings)
    func tamperedFieldsFail(_ tampering: (String, @Sendable (inout SignedLegacyOffer) -> Void)) throws {
        var bundle = try OfferSigner.signLegacy(offer, with: new)
        tampering.1(&bundle)
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring())
        #expect(!result.valid)
        #expect(result.reason == "signature_mismatch")
    }

    @Test func garbageSignatureIsMalformed() throws {
        var bundle = try OfferSigner.signLegacy(offer, with: new)
        bundle.signature = "not base64!"
        #expect(LegacyOfferVerifier.verify(bundle, keyRing: try ring()).reason == "malformed_signature")
        bundle.signature = Data([1, 2, 3]).base64EncodedString()
        #expect(LegacyOfferVerifier.verify(bundle, keyRing: try ring()).reason == "malformed_signature")
    }

    @Test func anOldBundleIsValidButExpired() throws {
        let dayAndAMinuteAgo = OfferSigner.currentTimestamp() - LegacyOfferVerifier.validityMilliseconds - 60_000
        let bundle = try OfferSigner.signLegacy(offer, with: new, timestamp: dayAndAMinuteAgo)
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring())
        #expect(result.valid)
        #expect(result.validityWindow == "expired")
    }

    @Test func aFutureTimestampIsReported() throws {
        let bundle = try OfferSigner.signLegacy(offer, with: new, timestamp: OfferSigner.currentTimestamp() + 3_600_000)
        #expect(LegacyOfferVerifier.verify(bundle, keyRing: try ring()).validityWindow == "future")
    }

    @Test func anUpperCaseUsernameIsVerifiedLowerCasedWithAWarning() throws {
        var bundle = try OfferSigner.signLegacy(offer, with: new)
        bundle.applicationUsername = "USER-1"
        let result = LegacyOfferVerifier.verify(bundle, keyRing: try ring())
        #expect(result.valid)
        #expect(result.warnings.count == 1)
    }

    @Test func aSeparatorInAFieldIsInvalid() throws {
        var bundle = try OfferSigner.signLegacy(offer, with: new)
        bundle.productIdentifier = "a\u{2063}b"
        #expect(LegacyOfferVerifier.verify(bundle, keyRing: try ring()).reason == "invalid_field")
    }
}
