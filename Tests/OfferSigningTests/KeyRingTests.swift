import Testing

@testable import OfferSigning

@Suite struct KeyRingTests {
    let first = try! SigningKey.generate(keyIdentifier: "FIRST00001")
    let second = try! SigningKey.generate(keyIdentifier: "SECOND0001")

    @Test func theOnlyKeyIsActiveByDefault() throws {
        let ring = try KeyRing(keys: [.init(key: first, source: "test")])
        #expect(try ring.activeKey().keyIdentifier == "FIRST00001")
        #expect(ring.state(of: "FIRST00001") == .active)
    }

    @Test func severalKeysWithoutAnActiveOneCannotSign() throws {
        let ring = try KeyRing(keys: [.init(key: first, source: "test"), .init(key: second, source: "test")])
        let error = #expect(throws: OfferSigningError.self) { try ring.activeKey() }
        #expect(error?.code == .noSigningKey)
        #expect(error?.message.contains("OFFER_SIGNER_ACTIVE_KEY_ID") == true)
    }

    @Test func statesAreDerivedFromActiveAndRevoked() throws {
        let third = try SigningKey.generate(keyIdentifier: "THIRD00001")
        let ring = try KeyRing(
            keys: [.init(key: first, source: "t"), .init(key: second, source: "t"), .init(key: third, source: "t")],
            activeKeyIdentifier: "SECOND0001",
            revokedKeyIdentifiers: ["THIRD00001"]
        )
        #expect(ring.state(of: "FIRST00001") == .retired)
        #expect(ring.state(of: "SECOND0001") == .active)
        #expect(ring.state(of: "THIRD00001") == .revoked)
        #expect(ring.state(of: "UNKNOWN") == nil)
    }

    @Test func perAppActiveKeyWins() throws {
        let ring = try KeyRing(
            keys: [.init(key: first, source: "t"), .init(key: second, source: "t")],
            activeKeyIdentifier: "FIRST00001",
            activeKeyIdentifiersByApp: ["com.example.other": "SECOND0001"]
        )
        #expect(try ring.activeKey(forApp: "com.example.other").keyIdentifier == "SECOND0001")
        #expect(try ring.activeKey(forApp: "com.example.app").keyIdentifier == "FIRST00001")
    }

    @Test func anUnknownActiveKeyIsRefused() {
        let error = #expect(throws: OfferSigningError.self) {
            try KeyRing(keys: [.init(key: first, source: "t")], activeKeyIdentifier: "NOPE")
        }
        #expect(error?.code == .unknownKey)
    }

    @Test func aRevokedActiveKeyIsRefused() {
        let error = #expect(throws: OfferSigningError.self) {
            try KeyRing(keys: [.init(key: first, source: "t")], activeKeyIdentifier: "FIRST00001", revokedKeyIdentifiers: ["FIRST00001"])
        }
        #expect(error?.code == .noSigningKey)
    }

    @Test func oneIdentifierForTwoDifferentKeysIsRefused() throws {
        let impostor = try SigningKey.generate(keyIdentifier: "FIRST00001")
        let error = #expect(throws: OfferSigningError.self) {
            try KeyRing(keys: [.init(key: first, source: "a"), .init(key: impostor, source: "b")])
        }
        #expect(error?.code == .conflictingKey)
    }

    @Test func theSameKeyFromTwoSourcesIsOneKey() throws {
        let ring = try KeyRing(keys: [.init(key: first, source: "a"), .init(key: first, source: "b")])
        #expect(ring.entries.count == 1)
    }
}
