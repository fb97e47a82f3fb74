import Foundation
import OfferModel
import Testing

@testable import OfferStore

/// One owner per (app, environment, original transaction): ``TransactionClaim`` made inside the write, raced on one
/// store and, on PostgreSQL, on two stores sharing the database (two replicas).
@Suite struct TransactionClaimTests {
    let app = "com.example.claim-\(UUID().uuidString.prefix(8).lowercased())"

    private func key(_ name: String) -> CustomerKey { CustomerKey(bundleIdentifier: app, applicationUsername: name) }

    private func subscribe(_ original: String) -> @Sendable (inout CustomerFacts) throws -> Void {
        { facts in
            facts.subscriptions.append(
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "g",
                    productIdentifier: "p",
                    originalTransactionId: original,
                    state: .active,
                    autoRenewEnabled: true,
                    expiresDate: Date() + 86_400,
                    renewalCount: 0,
                    hadIntroductoryOffer: false
                )
            )
        }
    }

    /// Two customers claim one original transaction at the same instant, `rounds` times: exactly one write goes
    /// through each round, the other is refused with `transactionClaimed` and writes nothing.
    private func race(_ first: any OfferStore, _ second: any OfferStore, rounds: Int) async throws {
        for round in 0..<rounds {
            let original = "\(2_000_000_000 + round)\(Int.random(in: 100_000...999_999))"
            let claim = TransactionClaim(environment: "Sandbox", originalTransactionId: original)
            let (alice, bob) = (key("alice-\(round)"), key("bob-\(round)"))
            async let a: Bool = Self.succeeded { try await first.updateCustomer(alice, claiming: [claim], subscribe(original)) }
            async let b: Bool = Self.succeeded { try await second.updateCustomer(bob, claiming: [claim], subscribe(original)) }
            let (wonA, wonB) = try await (a, b)
            #expect(wonA != wonB, "round \(round): both or neither owned \(original)")
            let owner = try await first.transactionOwner(bundleIdentifier: app, environment: "Sandbox", originalTransactionId: original)
            #expect(owner == (wonA ? alice : bob))
            let loser = wonA ? bob : alice
            #expect(try await first.customerFacts(for: loser) == nil, "the refused write left facts behind")
            #expect(try await first.customers(withOriginalTransactionId: original) == [wonA ? alice : bob])
        }
    }

    private static func succeeded(_ body: () async throws -> CustomerFacts) async throws -> Bool {
        do {
            _ = try await body()
            return true
        } catch let error as OfferStoreError where error.code == .transactionClaimed {
            return false
        }
    }

    @Test(
        "two customers claiming one original transaction at once: one owner, the other refused, 25 rounds on one store",
        arguments: Backend.available
    )
    func oneOwnerOnOneStore(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        try await race(store, store, rounds: 25)
        try await store.close()
    }

    @Test(
        "two customers claiming one original transaction at once on two replicas sharing PostgreSQL: one owner, 25 rounds",
        .enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL")
    )
    func oneOwnerAcrossReplicas() async throws {
        let (first, _) = try await Backend.postgres.open()
        let (second, _) = try await Backend.postgres.open()
        try await race(first, second, rounds: 25)
        try await first.close()
        try await second.close()
    }

    @Test(
        "the owner claims again freely; an internal key is replaced only by a claim that names it; environments are apart",
        arguments: Backend.available
    )
    func ownerAndReplacement(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let original = "3000000000\(Int.random(in: 100_000...999_999))"
        let unclaimed = key("otid:\(original)")
        try await store.updateCustomer(
            unclaimed,
            claiming: [TransactionClaim(environment: "Production", originalTransactionId: original)],
            subscribe(original)
        )
        try await store.updateCustomer(
            unclaimed,
            claiming: [TransactionClaim(environment: "Production", originalTransactionId: original)],
            subscribe(original)
        )
        // Without naming the internal key, nobody else takes it.
        await #expect(throws: OfferStoreError.self) {
            try await store.updateCustomer(
                key("carol"),
                claiming: [TransactionClaim(environment: "Production", originalTransactionId: original)],
                subscribe(original)
            )
        }
        // Naming it (the transaction's own token names the claimant), the claimant takes it.
        try await store.updateCustomer(
            key("dave"),
            claiming: [TransactionClaim(environment: "Production", originalTransactionId: original, replacing: "otid:\(original)")],
            subscribe(original)
        )
        #expect(try await store.transactionOwner(bundleIdentifier: app, environment: "Production", originalTransactionId: original) == key("dave"))
        // Once an account owns it, naming the internal key moves nothing.
        await #expect(throws: OfferStoreError.self) {
            try await store.updateCustomer(
                key("erin"),
                claiming: [TransactionClaim(environment: "Production", originalTransactionId: original, replacing: "otid:\(original)")],
                subscribe(original)
            )
        }
        // The same identifier in another environment is another transaction.
        try await store.updateCustomer(
            key("erin"),
            claiming: [TransactionClaim(environment: "Sandbox", originalTransactionId: original)],
            subscribe(original)
        )
        #expect(try await store.transactionOwner(bundleIdentifier: app, environment: "Sandbox", originalTransactionId: original) == key("erin"))
        try await store.close()
    }
}

/// Key states and other documents reach every replica as they commit (PostgreSQL LISTEN/NOTIFY).
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct DocumentChangeFeedTests {
    @Test("a document changed on one replica is announced to another as it commits; a refused compare-and-set announces nothing")
    func changesReachTheOtherReplica() async throws {
        let (writer, _) = try await Backend.postgres.open()
        let (reader, _) = try await Backend.postgres.open()
        let name = "feed-test-\(UUID().uuidString.prefix(8).lowercased())"
        let changes = reader.documentChanges()
        var iterator = changes.makeAsyncIterator()
        // The listener announces itself once it listens: from then on nothing is missed.
        #expect(await iterator.next() == "*")
        #expect(try await writer.replaceDocument(named: name, version: 1, text: "one"))
        #expect(try await !writer.replaceDocument(named: name, version: 1, text: "stale"))
        #expect(try await writer.replaceDocument(named: name, version: 2, text: "two"))
        var heard: [String] = []
        while heard.count < 2, let next = await iterator.next() {
            if next == name { heard.append(next) }
        }
        #expect(heard == [name, name])
        #expect(try await reader.document(named: name)?.text == "two")
        try await reader.close()
        try await writer.close()
    }

    @Test("a SQLite file's store, which one process serves, ends the stream at once")
    func sqliteHasNoFeed() async throws {
        let (store, _) = try await Backend.sqlite.open()
        var iterator = store.documentChanges().makeAsyncIterator()
        #expect(await iterator.next() == nil)
        try await store.close()
    }
}
