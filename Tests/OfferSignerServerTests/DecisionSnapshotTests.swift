import AppStoreTestSupport
import Foundation
import OfferEligibility
import OfferModel
import OfferSigning
import OfferStore
import Testing

@testable import OfferApplication

/// The decision log's facts snapshot made from the customer's stored facts' text (``DecisionSnapshot/text(_:lookback:storedFacts:)``)
/// instead of encoding the facts again: the same text, so the same hash, and never the customer's identifier.
@Suite struct DecisionSnapshotTests {
    static let username = "snapshot-customer-7f3a"

    /// Facts with every kind of member: subscriptions with dates, a grant, flags whose values need escaping.
    static func facts(_ bundle: String) -> CustomerFacts {
        let day = Date(timeIntervalSince1970: 1_750_000_000.123)
        return CustomerFacts(
            key: CustomerKey(bundleIdentifier: bundle, applicationUsername: username),
            subscriptions: [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "21000001",
                    productIdentifier: "com.example.monthly",
                    originalTransactionId: "2000000123",
                    state: .expired,
                    autoRenewEnabled: false,
                    expiresDate: day.addingTimeInterval(-40 * 86_400),
                    originalPurchaseDate: day,
                    renewalCount: 3,
                    hadIntroductoryOffer: true,
                    expirationIntent: 1,
                    lastSignedDate: day
                )
            ],
            storefront: "USA",
            flags: ["churnRisk": "high", "note": "a \"quoted\" {brace} [and] back\\slash / é"],
            grants: [
                CustomerServiceGrant(
                    id: "grant-1",
                    productIdentifier: "com.example.monthly",
                    offerIdentifier: "sorry",
                    grantedBy: "carol",
                    grantedAt: day,
                    expiresAt: day.addingTimeInterval(86_400)
                )
            ],
            updatedAt: day
        )
    }

    static func context(_ facts: CustomerFacts, issued: [IssuedSignature] = []) -> EligibilityContext {
        EligibilityContext(
            bundleIdentifier: facts.key.bundleIdentifier,
            productIdentifier: "com.example.monthly",
            offerIdentifier: "once",
            subscriptionGroupIdentifier: "21000001",
            facts: facts,
            issuedSignatures: issued,
            now: Date()
        )
    }

    @Test("from the text the store encoded, the snapshot is the one encoding the facts makes, byte for byte, with signatures or none")
    func sameText() throws {
        let facts = Self.facts("com.example.snapshot")
        let stored = try StoredFactsText.encode(facts)
        let issued = [
            IssuedSignature(
                nonce: "n1",
                keyIdentifier: "KEY1",
                bundleIdentifier: "com.example.snapshot",
                productIdentifier: "com.example.monthly",
                offerIdentifier: "once",
                applicationUsername: Self.username,
                timestamp: Int64(Date().timeIntervalSince1970 * 1000) - 1_000,
                format: "legacy"
            )
        ]
        for (issued, lookback) in [([], 30 * 86_400.0), (issued, 30 * 86_400.0), (issued, nil)] as [([IssuedSignature], TimeInterval?)] {
            let context = Self.context(facts, issued: issued)
            let text = try DecisionSnapshot.text(context, lookback: lookback, storedFacts: stored)
            #expect(text == (try DecisionSnapshot(context, lookback: lookback).encoded()))
            #expect(!text.contains(Self.username))
        }
    }

    @Test("the signatures of the lookback written directly are the encoder's text; identifiers it would escape are left to it")
    func issuedText() throws {
        let alphabet = Array("abcXYZ019._-~ :{}[],'\"\\/é\u{7F}\n")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let issued = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                DecisionSnapshot.Issued(
                    productIdentifier: String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }),
                    offerIdentifier: String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }),
                    timestamp: Int64.random(in: Int64.min...Int64.max, using: &generator)
                )
            }
            let encoded = try StoredFactsText.encode(issued)
            if let written = StoredFactsText.issuedText(issued) {
                #expect(written == encoded)
            } else {
                // Left to the encoder only for a character outside printable ASCII, or one it escapes.
                let identifiers = issued.flatMap { [$0.productIdentifier, $0.offerIdentifier] }.joined()
                #expect(identifiers.unicodeScalars.contains { !(" "..."~").contains($0) || "\"\\/".unicodeScalars.contains($0) })
            }
        }
        let plain = DecisionSnapshot.Issued(productIdentifier: "com.example.monthly", offerIdentifier: "winback_50", timestamp: 1_750_000_000_123)
        #expect(StoredFactsText.issuedText([plain, plain]) == (try StoredFactsText.encode([plain, plain])))
        #expect(StoredFactsText.issuedText([]) == "[]")
    }

    @Test("text the scan does not follow is encoded instead; spaced JSON is blanked in place and still decodes to the facts")
    func otherText() throws {
        let facts = Self.facts("com.example.snapshot")
        let context = Self.context(facts)
        let encoded = try DecisionSnapshot(context, lookback: 86_400).encoded()
        let stored = try StoredFactsText.encode(facts)
        let refused = [
            "", "[]", "{}", "{", "null", "{\"key\":{}}", String(stored.dropLast()), stored + "x", stored + stored,
            stored.replacingOccurrences(of: "\"updatedAt\"", with: "\"changedAt\""),
            stored.replacingOccurrences(of: "{\"flags\"", with: "{\"key\":1,\"flags\""),
            "{\"key\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + ",\"updatedAt\":0}",
            "{\"key\":\"unterminated,\"updatedAt\":0}",
        ]
        for text in refused {
            #expect(StoredFactsText.anonymized(text, bundleIdentifier: "com.example.snapshot") == nil, "\(text.prefix(40))")
            #expect(try DecisionSnapshot.text(context, lookback: 86_400, storedFacts: text) == encoded)
        }
        let spaced =
            " {\n  \"flags\" : {\"churnRisk\" : \"high\"},\t\"key\" : "
            + "{\"applicationUsername\": \"\(Self.username)\", \"bundleIdentifier\": \"x\"},"
            + " \"grants\": [], \"subscriptions\" : [ ], \"updatedAt\" : 1750000000123 } "
        let blanked = try #require(StoredFactsText.anonymized(spaced, bundleIdentifier: "com.example.snapshot"))
        #expect(!blanked.contains(Self.username))
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        let decoded = try decoder.decode(CustomerFacts.self, from: Data(blanked.utf8))
        #expect(decoded.key == CustomerKey(bundleIdentifier: "com.example.snapshot", applicationUsername: ""))
        #expect(decoded.updatedAt == Date(timeIntervalSince1970: 0))
        #expect(decoded.flags == ["churnRisk": "high"])
    }

    @Test(
        "a decision logs the snapshot encoding the facts read would make; under the customer's lock it is made from their stored text",
        arguments: ConcurrencyTests.RaceStore.all
    )
    func logged(_ race: ConcurrencyTests.RaceStore) async throws {
        let fixture = try await StoreFixture(race.backend, exclusive: race.exclusive)
        let key = CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: Self.username)
        let facts = Self.facts(fixture.bundle)
        _ = try await fixture.store.updateCustomer(key) { $0 = facts }
        let request = SignOfferRequest(productIdentifier: TestPayloads.productIdentifier, offerIdentifier: "once", applicationUsername: Self.username)
        _ = try await fixture.service.signing.signLegacy(request)
        await #expect(throws: OfferServiceError.self) { try await fixture.service.signing.signLegacy(request) }  // the cap of 1
        await fixture.store.flushDecisionLog()
        let logged = try await fixture.store.policyDecisions(bundleIdentifiers: [fixture.bundle], since: 0, until: .max, after: nil, limit: 10)
        #expect(logged.map(\.granted).sorted { $0 && !$1 } == [true, false])
        let read = try #require(try await fixture.store.customerFacts(for: key))
        let issued = try await fixture.store.issuedSignatures(
            matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: Self.username)
        )
        #expect(issued.count == 1)
        let expected = [
            try DecisionSnapshot(Self.context(read), lookback: 30 * 86_400).encoded(),
            try DecisionSnapshot(Self.context(read, issued: issued), lookback: 30 * 86_400).encoded(),
        ]
        // The granted decision read no signature; the refused one read the granted one's.
        let inOrder = logged.sorted { $0.granted && !$1.granted }
        #expect(inOrder.map(\.factsHash) == expected.map(DecisionSnapshot.hash))
        #expect(inOrder.map(\.factsSnapshot) == expected)
        try await fixture.store.close()
    }
}
