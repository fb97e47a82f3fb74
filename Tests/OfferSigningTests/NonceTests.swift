import Foundation
import Testing

@testable import OfferSigning

@Suite struct NonceTests {
    @Test("a nonce is a version-4 UUID: version nibble 4, RFC 4122 variant, the other 122 bits as drawn")
    func layout() {
        let uuid = UUID.version4(high: .max, low: .max)
        #expect(uuid.uuidString == "FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF")
        #expect(UUID.version4(high: 0, low: 0).uuidString == "00000000-0000-4000-8000-000000000000")
        #expect(
            UUID.version4(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210).uuidString
                == "01234567-89AB-4DEF-BEDC-BA9876543210"
        )
    }

    @Test("fresh nonces differ, and each is version 4 with the RFC 4122 variant")
    func fresh() {
        let nonces = (0..<10_000).map { _ in UUID.randomVersion4().uuidString }
        #expect(Set(nonces).count == nonces.count)
        for nonce in nonces.prefix(100) {
            let characters = Array(nonce)
            #expect(characters[14] == "4")
            #expect("89AB".contains(characters[19]))
        }
    }

    @Test("a signature's nonce is fresh by default and lower-case in the bundle")
    func signatureNonce() throws {
        let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
        let offer = PromotionalOffer(
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback",
            applicationUsername: "user"
        )
        let first = try OfferSigner.signLegacy(offer, with: key)
        let second = try OfferSigner.signLegacy(offer, with: key)
        #expect(first.nonce != second.nonce)
        #expect(first.nonce == first.nonce.lowercased() && first.nonce.count == 36)
        #expect(Array(first.nonce)[14] == "4")
    }

    @Test("the payload's lower-case nonce text is uuidString lower-cased")
    func lowercasedString() {
        var uuids = [
            UUID.version4(high: .max, low: .max), UUID.version4(high: 0, low: 0),
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
        ]
        uuids += (0..<1_000).map { _ in UUID() }
        for uuid in uuids {
            #expect(uuid.lowercasedString == uuid.uuidString.lowercased())
        }
    }
}
