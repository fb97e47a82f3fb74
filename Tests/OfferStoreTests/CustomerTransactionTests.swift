import Foundation
import Logging
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// `withCustomerTransaction`: the decision and its record are atomic per customer, on both backends.
@Suite struct CustomerTransactionTests {
    /// A bundle identifier no other test uses, so tests sharing a PostgreSQL database do not meet.
    let app = "com.example.txn-\(UUID().uuidString.prefix(8).lowercased())"

    private func signature(
        _ key: CustomerKey,
        product: String = "com.example.monthly",
        offer: String = "capped",
        at timestamp: Int64 = 1_800_000_000_000
    ) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: key.bundleIdentifier,
            productIdentifier: product,
            offerIdentifier: offer,
            applicationUsername: key.applicationUsername,
            timestamp: timestamp,
            format: "legacy"
        )
    }

    /// The stores a race runs over. PostgreSQL: two stores (two connection pools) on one database, as two
    /// replicas would have. SQLite serves one process (docs/store.md): one store. (Two in one process would share
    /// sqlite-nio's thread pool, whose threads a connection waiting for the file's lock blocks.)
    private func stores(_ backend: Backend) async throws -> [any OfferStore] {
        let (first, _) = try await backend.open()
        guard backend == .postgres else { return [first] }
        let (second, _) = try await backend.open()
        return [first, second]
    }

    /// Runs `attempts` transactions at once, spread over `stores`; each signs the offer only if the customer holds
    /// fewer than `cap` signatures of it. Returns how many signed.
    private func race(_ stores: [any OfferStore], _ key: CustomerKey, attempts: Int, cap: Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<attempts {
                let store = stores[attempt % stores.count]
                let record = signature(key)
                group.addTask {
                    try await store.withCustomerTransaction(key, issuedSince: nil) { snapshot in
                        let issued = snapshot.issuedSignatures.filter { $0.offerIdentifier == "capped" }.count
                        // The decision takes a moment (signing does): without the lock, others read the same count meanwhile.
                        try await Task.sleep(for: .milliseconds(2))
                        return issued < cap ? CustomerCommit(value: true, record: record) : CustomerCommit(value: false)
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    @Test(
        "64 concurrent requests for an offer capped at 1 sign exactly once, five times over (on PostgreSQL over two stores)",
        arguments: Backend.available
    )
    func capHoldsUnderConcurrency(_ backend: Backend) async throws {
        let stores = try await stores(backend)
        for round in 0..<5 {
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: "capped-customer-\(round)")
            // A customer the store knows (from App Store notifications), as customers asking for offers are.
            try await stores[0].updateCustomer(key) { $0.flags["known"] = "yes" }
            #expect(try await race(stores, key, attempts: 64, cap: 1) == 1, "round \(round)")
        }
        #expect(try await stores[0].countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, offerIdentifier: "capped")) == 5)
        // A customer the store has not heard of is serialized the same way.
        let newcomer = CustomerKey(bundleIdentifier: app, applicationUsername: "newcomer")
        #expect(try await race(stores, newcomer, attempts: 20, cap: 2) == 2)
        #expect(try await stores[stores.count - 1].customerFacts(for: newcomer) == nil)
        for store in stores { try await store.close() }
    }

    @Test("a customer-service grant is used once among 64 concurrent requests (on PostgreSQL over two stores)", arguments: Backend.available)
    func grantIsUsedOnce(_ backend: Backend) async throws {
        let stores = try await stores(backend)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "granted")
        let grant = CustomerServiceGrant(
            productIdentifier: "com.example.monthly",
            offerIdentifier: "goodwill",
            grantedBy: "alice",
            expiresAt: Date() + 86_400
        )
        try await stores[0].updateCustomer(key) { $0.grants = [grant] }
        let signed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for attempt in 0..<64 {
                let store = stores[attempt % stores.count]
                let record = signature(key, offer: "goodwill")
                group.addTask {
                    try await store.withCustomerTransaction(key, issuedSince: nil) { snapshot in
                        guard var facts = snapshot.facts, let index = facts.grants.firstIndex(where: { $0.isUsable(at: Date()) }) else {
                            return CustomerCommit(value: false)
                        }
                        try await Task.sleep(for: .milliseconds(2))
                        facts.grants[index].usedAt = Date()
                        return CustomerCommit(value: true, facts: facts, record: record)
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(signed == 1)
        #expect(try await stores[stores.count - 1].customerFacts(for: key)?.grants.first?.usedAt != nil)
        #expect(
            try await stores[stores.count - 1].countIssuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: app, offerIdentifier: "goodwill")
            ) == 1
        )
        for store in stores { try await store.close() }
    }

    struct Refused: Error, Equatable { let reason: String }

    @Test("a body that throws writes nothing, and its error comes out unchanged", arguments: Backend.available)
    func throwingBodyWritesNothing(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let stranger = CustomerKey(bundleIdentifier: app, applicationUsername: "stranger")
        let error = await #expect(throws: Refused.self) {
            try await store.withCustomerTransaction(stranger, issuedSince: nil) { _ -> CustomerCommit<Void> in
                throw Refused(reason: "no")
            }
        }
        #expect(error == Refused(reason: "no"))
        #expect(try await store.customerFacts(for: stranger) == nil)

        // updateCustomer's body: the same.
        await #expect(throws: Refused(reason: "update")) {
            try await store.updateCustomer(stranger) { facts in
                facts.flags["half"] = "done"
                throw Refused(reason: "update")
            }
        }
        #expect(try await store.customerFacts(for: stranger) == nil)

        // A duplicate nonce fails the whole transaction: the facts written with it are rolled back too.
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "known")
        try await store.updateCustomer(key) { $0.flags["tier"] = "gold" }
        let recorded = signature(key)
        try await store.record(recorded)
        let duplicate = await #expect(throws: OfferStoreError.self) {
            try await store.withCustomerTransaction(key, issuedSince: nil) { snapshot in
                var facts = try #require(snapshot.facts)
                facts.flags["tier"] = "platinum"
                return CustomerCommit(facts: facts, record: recorded)
            }
        }
        #expect(duplicate?.code == .duplicateNonce)
        #expect(try await store.customerFacts(for: key)?.flags["tier"] == "gold")
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 1)
        try await store.close()
    }

    @Test(
        "facts and the record written in a transaction are read back; the snapshot holds this customer's signatures since a time, newest first",
        arguments: Backend.available
    )
    func factsAndSignaturesRoundTrip(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "Round-Trip")
        let other = CustomerKey(bundleIdentifier: app, applicationUsername: "someone-else")
        let old = signature(key, product: "com.example.annual", offer: "a", at: 1_000)
        let recent = signature(key, product: "com.example.annual", offer: "b", at: 5_000)
        for record in [old, recent, signature(other, at: 6_000)] { try await store.record(record) }

        let written = signature(key, offer: "c", at: 7_000)
        let original = String(UInt64.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))  // unique in a shared database
        let seen = try await store.withCustomerTransaction(key, issuedSince: 2_000) { snapshot in
            #expect(snapshot.facts == nil)
            var facts = CustomerFacts(key: key)
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "g",
                    productIdentifier: "com.example.monthly",
                    originalTransactionId: original,
                    state: .active
                )
            ]
            facts.flags["churnRisk"] = "high"
            return CustomerCommit(value: snapshot.issuedSignatures, facts: facts, record: written)
        }
        #expect(seen == [recent])

        let facts = try #require(try await store.customerFacts(for: key))
        #expect(facts.key.applicationUsername == "round-trip")
        #expect(facts.flags == ["churnRisk": "high"])
        #expect(try await store.customers(withOriginalTransactionId: original) == [key])
        let snapshot = try await store.withCustomerTransaction(key, issuedSince: nil) { CustomerCommit(value: $0) }
        #expect(snapshot.facts == facts)
        #expect(snapshot.issuedSignatures == [written, recent, old])
        try await store.close()
    }

    /// `issuedSince` `Int64.max` (no signatures read): the body runs without the customer's lock, and the answer is
    /// claimed after it — the same outcome.
    @Test(
        "an answer key makes a transaction idempotent: the first answer is stored, a retry sees it and writes nothing",
        arguments: Backend.available,
        [nil, Int64.max] as [Int64?]
    )
    func answerKeyIsIdempotent(_ backend: Backend, issuedSince since: Int64?) async throws {
        let stores = try await stores(backend)
        let requestIdentifier = UUID().uuidString.lowercased()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "retried-\(requestIdentifier)")
        let offer = "retention-\(requestIdentifier.prefix(8))"
        // 20 concurrent deliveries of one request (over two stores on PostgreSQL): one signs, the others see its answer.
        let answers = try await withThrowingTaskGroup(of: String.self) { group in
            for attempt in 0..<20 {
                let store = stores[attempt % stores.count]
                var draft = signature(key, offer: offer)
                draft.channel = "retention"
                draft.requestIdentifier = requestIdentifier
                let record = draft
                let nonce = record.nonce
                group.addTask {
                    try await store.withCustomerTransaction(key, issuedSince: since, answerKey: "retention:\(requestIdentifier)") { snapshot in
                        if let stored = snapshot.storedAnswer {
                            #expect(snapshot.issuedSignatures.isEmpty)
                            return CustomerCommit(value: stored, record: record)  // ignored: a stored answer writes nothing
                        }
                        try await Task.sleep(for: .milliseconds(2))
                        return CustomerCommit(value: nonce, record: record, answer: nonce)
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(answers).count == 1)
        let issued = try await stores[0].issuedSignatures(
            matching: IssuedSignatureQuery(bundleIdentifier: app, applicationUsername: key.applicationUsername)
        )
        #expect(issued.count == 1)
        #expect(issued.first?.nonce == answers.first)
        #expect(issued.first?.channel == "retention")
        #expect(issued.first?.requestIdentifier == requestIdentifier)
        // The outcome report's rollup counts the one signature written, in the same transaction as the record.
        let sqlStore = try #require(stores[0] as? SQLOfferStore)
        let counted = try await sqlStore.backend.reading { database in
            try await database.select().column("issued").from("issued_daily").where("offer_identifier", .equal, offer)
                .all(decodingColumn: "issued", as: Int64.self).reduce(0, +)
        }
        #expect(counted == 1)
        // Another key answers afresh; without a key nothing is stored.
        let fresh = try await stores[0].withCustomerTransaction(key, issuedSince: since, answerKey: "retention:other-\(requestIdentifier)") {
            snapshot in
            CustomerCommit(value: snapshot.storedAnswer == nil, answer: "second")
        }
        #expect(fresh)
        for store in stores { try await store.close() }
    }

    // MARK: migrations

    /// The `schema_migrations` rows, through the store's own connection.
    private func appliedMigrations(_ store: any OfferStore) async throws -> [Int: Int64] {
        let store = try #require(store as? SQLOfferStore)
        let rows = try await store.backend.reading { database in
            try await database.select().columns("version", "applied_at").from("schema_migrations").all()
        }
        return Dictionary(
            uniqueKeysWithValues: try rows.map {
                (try $0.decode(column: "version", as: Int.self), try $0.decode(column: "applied_at", as: Int64.self))
            }
        )
    }

    @Test("migrations run again change nothing; schema_migrations.applied_at is in Unix milliseconds", arguments: Backend.available)
    func migrationsRunTwice(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let before = try await appliedMigrations(store)
        try await store.migrate()
        try await store.migrate()
        #expect(try await appliedMigrations(store) == before)
        #expect(before.keys.sorted() == StoreSchema.migrations.map(\.version))
        let now = Date().unixMilliseconds
        for (version, appliedAt) in before {
            #expect(appliedAt > 1_000_000_000_000 && appliedAt <= now, "version \(version) applied at \(appliedAt)")
        }
        try await store.close()
    }

    @Test("a database whose migrations were recorded in seconds is upgraded to milliseconds")
    func secondsUpgradeToMilliseconds() async throws {
        let (store, path) = try await Backend.sqlite.open()
        let sql = try #require(store as? SQLOfferStore)
        // As a database migrated before version 3 left it: versions 1 and 2, applied_at in seconds.
        try await sql.backend.transaction { database in
            try await database.run("DELETE FROM schema_migrations WHERE version = 3")
            try await database.run("UPDATE schema_migrations SET applied_at = 1790000000")
        }
        try await store.close()
        let (reopened, _) = try await Backend.sqlite.open(path: path)
        let applied = try await appliedMigrations(reopened)
        #expect(applied[1] == 1_790_000_000_000)
        #expect(applied[2] == 1_790_000_000_000)
        #expect(try #require(applied[3]) > 1_790_000_000_000)
        try await reopened.close()
    }

    @Test("a version-5 log (nonce primary key) is rebuilt keyed by (timestamp, nonce), every row kept")
    func logRebuiltOnVersion6() async throws {
        let (store, path) = try await Backend.sqlite.open()
        let sql = try #require(store as? SQLOfferStore)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "upgraded")
        let old = [signature(key, at: 1_700_000_000_002), signature(key, offer: "other", at: 1_700_000_000_001)]
        // As version 5 left the table: the nonce the primary key, three secondary indexes, the retention columns.
        let version5 = StoreSchema.migrations.filter { $0.version <= 5 }.flatMap(\.statements)
            .filter { "\($0)".contains("issued_signatures") }
        try await sql.backend.transaction { database in
            try await database.run("DROP TABLE issued_signatures")
            for statement in version5 { try await database.run(statement) }
            for record in old {
                try await database.run(
                    """
                    INSERT INTO issued_signatures (nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier,
                        application_username, timestamp, format, channel, request_identifier)
                    VALUES (\(bind: record.nonce), 'KEY1', \(bind: app), \(bind: record.productIdentifier), \(bind: record.offerIdentifier),
                        'upgraded', \(bind: record.timestamp), 'legacy', 'retention', 'request-1')
                    """
                )
            }
            try await database.run("DELETE FROM schema_migrations WHERE version = 6")
        }
        try await store.close()

        let (reopened, _) = try await Backend.sqlite.open(path: path)
        #expect(try await appliedMigrations(reopened)[6] != nil)
        let kept = try await reopened.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, limit: 10))
        #expect(kept.map(\.nonce) == old.map(\.nonce))
        #expect(kept.allSatisfy { $0.channel == "retention" && $0.requestIdentifier == "request-1" })
        let (indexes, unique) = try #require(
            try await (reopened as? SQLOfferStore)?.backend.reading { database in
                (
                    try await database.raw("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'issued_signatures'")
                        .all(decodingColumn: "name", as: String.self),
                    try await database.raw("SELECT name FROM pragma_index_info('sqlite_autoindex_issued_signatures_1') ORDER BY seqno")
                        .all(decodingColumn: "name", as: String.self)
                )
            }
        )
        #expect(Set(indexes) == ["issued_by_customer", "issued_by_key", "sqlite_autoindex_issued_signatures_1"])
        #expect(unique == ["timestamp", "nonce"])
        // A record written again is still refused; a new one is written.
        let error = await #expect(throws: OfferStoreError.self) { try await reopened.record(old[0]) }
        #expect(error?.code == .duplicateNonce)
        try await reopened.record(signature(key, at: 1_700_000_000_003))
        #expect(try await reopened.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 3)
        try await reopened.close()
    }
}
