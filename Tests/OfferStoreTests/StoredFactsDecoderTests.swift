import Foundation
import OfferModel
import Testing

@testable import OfferStore

/// The stored facts' own reader (``StoredFactsDecoder``) against `JSONDecoder`, the reader it stands in for.
@Suite struct StoredFactsDecoderTests {
    /// `JSONDecoder` as the store used it before: the reference.
    private func reference(_ text: String) throws -> CustomerFacts {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try decoder.decode(CustomerFacts.self, from: Data(text.utf8))
    }

    /// A deterministic generator (SplitMix64), so a failure names a case that can be run again.
    private struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
    }

    private static let plain = Array("abcXYZ019-_.é日本🙂 ")
    private static let escaped = Array("\"\\/\n\t\u{01}")

    private func text(_ random: inout Generator, escapes: Bool) -> String {
        let length = Int.random(in: 0...12, using: &random)
        return String(
            (0..<length).map { _ in
                escapes && Int.random(in: 0..<4, using: &random) == 0
                    ? Self.escaped.randomElement(using: &random)! : Self.plain.randomElement(using: &random)!
            }
        )
    }

    private func date(_ random: inout Generator) -> Date {
        // Whole and fractional milliseconds, before and after 1970.
        Int.random(in: 0..<3, using: &random) == 0
            ? Date(timeIntervalSince1970: Double(Int64.random(in: -1_000_000_000_000...4_000_000_000_000, using: &random)) / 1000)
            : Date(timeIntervalSince1970: Double.random(in: -2e9...4e9, using: &random))
    }

    private func facts(_ random: inout Generator, escapes: Bool) -> CustomerFacts {
        var key = CustomerKey(bundleIdentifier: text(&random, escapes: escapes), applicationUsername: "")
        key.applicationUsername = text(&random, escapes: escapes)  // upper case kept, as stored
        let subscriptions = (0..<Int.random(in: 0...3, using: &random)).map { _ in
            SubscriptionFacts(
                subscriptionGroupIdentifier: text(&random, escapes: escapes),
                productIdentifier: text(&random, escapes: escapes),
                originalTransactionId: Bool.random(using: &random) ? text(&random, escapes: escapes) : nil,
                state: SubscriptionState.allCases.randomElement(using: &random)!,
                autoRenewEnabled: Bool.random(using: &random),
                autoRenewProductIdentifier: Bool.random(using: &random) ? text(&random, escapes: escapes) : nil,
                expiresDate: Bool.random(using: &random) ? date(&random) : nil,
                originalPurchaseDate: Bool.random(using: &random) ? date(&random) : nil,
                renewalCount: Int.random(in: Int.min...Int.max, using: &random),
                hadIntroductoryOffer: Bool.random(using: &random),
                expirationIntent: Bool.random(using: &random) ? Int.random(in: -5...5, using: &random) : nil,
                downgraded: Bool.random(using: &random),
                lastSignedDate: Bool.random(using: &random) ? date(&random) : nil
            )
        }
        let flags = Dictionary(
            (0..<Int.random(in: 0...3, using: &random)).map { _ in (text(&random, escapes: escapes), text(&random, escapes: escapes)) },
            uniquingKeysWith: { first, _ in first }
        )
        let grants = (0..<Int.random(in: 0...2, using: &random)).map { _ in
            CustomerServiceGrant(
                id: text(&random, escapes: escapes),
                productIdentifier: text(&random, escapes: escapes),
                offerIdentifier: text(&random, escapes: escapes),
                grantedBy: text(&random, escapes: escapes),
                grantedAt: date(&random),
                expiresAt: date(&random),
                usedAt: Bool.random(using: &random) ? date(&random) : nil
            )
        }
        return CustomerFacts(
            key: key,
            subscriptions: subscriptions,
            storefront: Bool.random(using: &random) ? text(&random, escapes: escapes) : nil,
            flags: flags,
            grants: grants,
            updatedAt: date(&random)
        )
    }

    @Test("2,000 random facts as the store writes them: read by the fast path, equal to what JSONDecoder reads")
    func randomFactsWithoutEscapes() throws {
        var random = Generator(state: 40)
        for round in 0..<2000 {
            let facts = facts(&random, escapes: false)
            let text = try StoreCoding.encode(facts)
            let fast = try #require(StoredFactsDecoder.decode(text), "round \(round): \(text)")
            #expect(fast == (try reference(text)), "round \(round): \(text)")
        }
    }

    @Test("2,000 random facts with characters JSON escapes: the store reads each as JSONDecoder does")
    func randomFactsWithEscapes() throws {
        var random = Generator(state: 41)
        var fast = 0
        for round in 0..<2000 {
            let text = try StoreCoding.encode(facts(&random, escapes: true))
            if StoredFactsDecoder.decode(text) != nil { fast += 1 }
            #expect(try StoreCoding.decodeFacts(text) == (try reference(text)), "round \(round): \(text)")
        }
        // Some documents had no escaped character; most had one (and went to JSONDecoder).
        #expect(fast > 0 && fast < 2000)
    }

    @Test("the benchmark's seeded facts (Benchmarks/Signing/seed-customers.sh) and pretty-printed JSON: the fast path")
    func seededShape() throws {
        let seeded = """
            {"flags":{},"grants":[],"key":{"applicationUsername":"bench-7","bundleIdentifier":"com.example.app"},"storefront":"GBR",\
            "subscriptions":[{"autoRenewEnabled":false,"downgraded":false,"expiresDate":1761000000000,"hadIntroductoryOffer":true,\
            "originalTransactionId":"2000000000000007","productIdentifier":"com.example.monthly","renewalCount":7,"state":"expired",\
            "subscriptionGroupIdentifier":"21000001"}],"updatedAt":1764460000000}
            """
        let facts = try #require(StoredFactsDecoder.decode(seeded))
        #expect(facts == (try reference(seeded)))
        #expect(facts.subscriptions.first?.renewalCount == 7 && facts.storefront == "GBR")
        let pretty =
            " {\n \"flags\" : { \"churnRisk\" : \"high\" },\t\"grants\" : [ ],\r\n \"key\" : { \"bundleIdentifier\" : \"a\", "
            + "\"applicationUsername\" : \"B\" }, \"storefront\" : null, \"subscriptions\" : [ ], \"updatedAt\" : -1.5e3 } \n"
        let read = try #require(StoredFactsDecoder.decode(pretty))
        #expect(read == (try reference(pretty)))
        #expect(read.key.applicationUsername == "B")
    }

    /// A stored document with a subscription whose members are `subscription` (its other members given), then `tail`.
    private static func document(subscription: String? = nil, tail: String = #","updatedAt":1}"#) -> String {
        let head = #"{"flags":{},"grants":[],"key":{"applicationUsername":"u","bundleIdentifier":"b"},"subscriptions":["#
        let members = subscription.map {
            #"{"downgraded":false,"hadIntroductoryOffer":false,"productIdentifier":"p","subscriptionGroupIdentifier":"g","#
                + $0 + "}"
        }
        return head + (members ?? "") + "]" + tail
    }

    @Test(
        "what the fast path does not read goes to JSONDecoder, which reads it or refuses it as before",
        arguments: [
            // A key the model does not have (JSONDecoder ignores it); a key twice; an escaped character.
            document(tail: #","updatedAt":1,"extra":[1,{"a":null}]}"#),
            document(tail: #","updatedAt":1,"updatedAt":2}"#),
            document(tail: #","updatedAt":1,"storefront":"\u0055SA"}"#),
            // A name twice among many: the 18th flag repeats the 3rd; the 5th repeats the 2nd.
            #"{"flags":{"# + (0..<20).map { #""f\#($0 == 17 ? 2 : $0)":"v""# }.joined(separator: ",")
                + #"},"grants":[],"key":{"applicationUsername":"u","bundleIdentifier":"b"},"subscriptions":[],"updatedAt":1}"#,
            #"{"flags":{"# + (0..<6).map { #""f\#($0 == 4 ? 1 : $0)":"v""# }.joined(separator: ",")
                + #"},"grants":[],"key":{"applicationUsername":"u","bundleIdentifier":"b"},"subscriptions":[],"updatedAt":1}"#,
            // A whole number written with a fraction, or with a leading zero.
            document(subscription: #""autoRenewEnabled":true,"renewalCount":2.0,"state":"active""#),
            document(tail: #","updatedAt":01}"#),
            // A required key missing; a state the model does not have; a number past Int; a string for a bool.
            document(tail: "}"),
            document(subscription: #""autoRenewEnabled":true,"renewalCount":2,"state":"paused""#),
            document(subscription: #""autoRenewEnabled":true,"renewalCount":9223372036854775808,"state":"active""#),
            document(subscription: #""autoRenewEnabled":"yes","renewalCount":2,"state":"active""#),
            // Text after the object; truncated; not JSON.
            document(tail: #","updatedAt":1} x"#),
            document(tail: #","updatedAt":1"#),
            "", "null", "[]", "{",
        ]
    )
    func givesUp(text: String) throws {
        // The same shape with every name once is read by the fast path.
        let manyFlags =
            #"{"flags":{"# + (0..<20).map { #""f\#($0)":"v""# }.joined(separator: ",")
            + #"},"grants":[],"key":{"applicationUsername":"u","bundleIdentifier":"b"},"subscriptions":[],"updatedAt":1}"#
        #expect(StoredFactsDecoder.decode(manyFlags)?.flags.count == 20)
        #expect(StoredFactsDecoder.decode(text) == nil)
        // The same document with a plain subscription is read by the fast path: what it gave up on is the change.
        #expect(StoredFactsDecoder.decode(Self.document(subscription: #""autoRenewEnabled":true,"renewalCount":2,"state":"active""#)) != nil)
        switch Result(catching: { try reference(text) }) {
        case .success(let facts): #expect(try StoreCoding.decodeFacts(text) == facts)
        case .failure: #expect((try? StoreCoding.decodeFacts(text)) == nil)
        }
    }
}
