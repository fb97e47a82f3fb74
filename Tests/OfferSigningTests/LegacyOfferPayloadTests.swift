import Foundation
import Testing

@testable import OfferSigning

/// Payload vectors. The expected bytes were captured from Apple's own Python library
/// (`app-store-server-library` 3.1.2, `PromotionalOfferSignatureCreator.create_signature`), by recording the
/// bytes it handed to the key's `sign`; `IntegrationTests/interop.py` re-checks the same construction on every CI run.
@Suite struct LegacyOfferPayloadTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let bundleIdentifier, keyIdentifier, productIdentifier, offerIdentifier, applicationUsername, nonce: String
        let timestamp: Int64
        let expectedHex: String
        var testDescription: String { "\(bundleIdentifier) \(applicationUsername)" }
    }

    static let vectors: [Vector] = [
        Vector(
            bundleIdentifier: "com.example.app",
            keyIdentifier: "ABC123DEFG",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            applicationUsername: "User-0001",
            nonce: "7A0E1C2B-3D4E-4F50-8a6B-7C8D9E0F1A2B",
            timestamp: 1_700_000_000_000,
            expectedHex:
                """
                636f6d2e6578616d706c652e617070e281a341424331323344454647e281a3636f6d2e6578616d706c652e6d6f6e74686c79e281a377696e6261636b5f3530e28\
                1a3757365722d30303031e281a337613065316332622d336434652d346635302d386136622d376338643965306631613262e281a3313730303030303030303030\
                30
                """
        ),
        Vector(
            bundleIdentifier: "com.example.app",
            keyIdentifier: "KEY2",
            productIdentifier: "com.example.yearly",
            offerIdentifier: "retention.30",
            applicationUsername: "8C1D6A9E-0B2F-4C3D-9E8F-1A2B3C4D5E6F",
            nonce: "2f9c0c4e-5d6b-4a7c-8e9f-0a1b2c3d4e5f",
            timestamp: 1_762_387_200_123,
            expectedHex:
                """
                636f6d2e6578616d706c652e617070e281a34b455932e281a3636f6d2e6578616d706c652e796561726c79e281a3726574656e74696f6e2e3330e281a33863316\
                4366139652d306232662d346333642d396538662d316132623363346435653666e281a332663963306334652d356436622d346137632d386539662d3061316232\
                63336434653566e281a331373632333837323030313233
                """
        ),
        Vector(
            bundleIdentifier: "co.ünïcode.app",
            keyIdentifier: "K",
            productIdentifier: "prod",
            offerIdentifier: "offer",
            applicationUsername: "ÅSA@Example.COM",
            nonce: "00000000-0000-4000-8000-000000000000",
            timestamp: 1,
            expectedHex:
                """
                636f2ec3bc6ec3af636f64652e617070e281a34be281a370726f64e281a36f66666572e281a3c3a57361406578616d706c652e636f6de281a3303030303030303\
                02d303030302d343030302d383030302d303030303030303030303030e281a331
                """
        ),
    ]

    @Test("payload bytes match Apple's Python library", arguments: vectors)
    func payloadMatchesApplesLibrary(_ vector: Vector) {
        let offer = PromotionalOffer(
            bundleIdentifier: vector.bundleIdentifier,
            productIdentifier: vector.productIdentifier,
            offerIdentifier: vector.offerIdentifier,
            applicationUsername: vector.applicationUsername
        )
        let payload = LegacyOfferPayload(offer: offer, keyIdentifier: vector.keyIdentifier, nonce: vector.nonce, timestamp: vector.timestamp)
        #expect(payload.bytes.map { String(format: "%02x", $0) }.joined() == vector.expectedHex)
    }

    @Test func separatorIsInvisibleSeparatorAndDisplayShowsIt() {
        let offer = PromotionalOffer(bundleIdentifier: "a", productIdentifier: "p", offerIdentifier: "o", applicationUsername: "U")
        let payload = LegacyOfferPayload(offer: offer, keyIdentifier: "K", nonce: "N", timestamp: 5)
        #expect(payload.string == "a\u{2063}K\u{2063}p\u{2063}o\u{2063}u\u{2063}n\u{2063}5")
        #expect(Array("\u{2063}".utf8) == [0xE2, 0x81, 0xA3])
        #expect(payload.displayString == #"a\u2063K\u2063p\u2063o\u2063u\u2063n\u20635"#)
    }

    static let fields = ["bundleIdentifier", "productIdentifier", "offerIdentifier", "applicationUsername"]

    private func offer(setting field: String, to value: String) -> PromotionalOffer {
        var offer = PromotionalOffer(
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            applicationUsername: "user-1"
        )
        switch field {
        case "bundleIdentifier": offer.bundleIdentifier = value
        case "productIdentifier": offer.productIdentifier = value
        case "offerIdentifier": offer.offerIdentifier = value
        default: offer.applicationUsername = value
        }
        return offer
    }

    @Test("a field containing U+2063 is refused, naming the field", arguments: fields)
    func separatorInFieldIsRefused(_ field: String) {
        let error = #expect(throws: OfferSigningError.self) { try offer(setting: field, to: "a\u{2063}b").validate() }
        #expect(error?.code == .invalidField)
        #expect(error?.field == field)
    }

    @Test("an empty field is refused", arguments: fields)
    func emptyFieldIsRefused(_ field: String) {
        let error = #expect(throws: OfferSigningError.self) { try offer(setting: field, to: "").validate() }
        #expect(error?.field == field)
    }

    @Test("a field over its bound is refused; at the bound it is accepted", arguments: fields)
    func overLongFieldIsRefused(_ field: String) throws {
        let bound = try #require(PromotionalOffer.maximumLengths[field])
        try offer(setting: field, to: String(repeating: "x", count: bound)).validate()
        let error = #expect(throws: OfferSigningError.self) { try offer(setting: field, to: String(repeating: "x", count: bound + 1)).validate() }
        #expect(error?.field == field)
    }

    @Test("control characters are refused", arguments: ["a\nb", "a\u{0}b", "a\u{7F}b", "tab\there"])
    func controlCharactersAreRefused(_ value: String) {
        #expect(throws: OfferSigningError.self) { try offer(setting: "offerIdentifier", to: value).validate() }
    }

    @Test("the signed bytes are the payload string's UTF-8, and only upper case is lowered")
    func bytesAreTheStringsUTF8() {
        let usernames = ["user-1", "User-ONE", "ÄÖÜ-ünïcödé", "漢字-ID", "8C1D6B2E-0000-4000-8000-0123456789AB", "a"]
        for username in usernames {
            let offer = PromotionalOffer(
                bundleIdentifier: "com.example.app",
                productIdentifier: "com.example.monthly",
                offerIdentifier: "winback_50",
                applicationUsername: username
            )
            let payload = LegacyOfferPayload(
                offer: offer,
                keyIdentifier: "ABC123DEFG",
                nonce: "F0E1D2C3-B4A5-4687-9887-A6B5C4D3E2F1",
                timestamp: 1_795_480_209_343
            )
            #expect(payload.bytes == Array(payload.string.utf8))
            #expect(payload.applicationUsername == username.lowercased())
            #expect(payload.nonce == "f0e1d2c3-b4a5-4687-9887-a6b5c4d3e2f1")
        }
    }
}
