import Foundation
import Logging
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// The backends the suite runs on: SQLite always; PostgreSQL when OFFER_SIGNER_TEST_DATABASE_URL is set
/// (`eval "$(scripts/start-postgres.sh)"`; CI always sets it).
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static let postgresURL = ProcessInfo.processInfo.environment["OFFER_SIGNER_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// The URL a test's store opens: `postgresURL` with its pool bounded to `connectionsPerStore` connections
    /// (`pool_max_conns`), unless the URL bounds it itself. The suite runs its PostgreSQL tests at once, a store
    /// each (two for a replica); `scripts/start-postgres.sh` sizes the server's `max_connections` for them.
    /// How long a test's store waits for the database: the whole suite runs at once on two cores, so a connection
    /// can take longer than the service's default bound (2 s), which the outage tests check on stores of their own.
    static let testStoreTimeout: Duration = .seconds(30)

    static var postgresStoreURL: String? {
        postgresURL.map { url in
            url.contains("pool_max_conns=") ? url : url + (url.contains("?") ? "&" : "?") + "pool_max_conns=\(connectionsPerStore)"
        }
    }
    /// Enough for a test's concurrent requests (a customer's lock serializes them anyway) and a nested lease.
    static let connectionsPerStore = 4
    static var available: [Backend] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }

    /// A store, and the SQLite file when there is one.
    func open(path: String? = nil) async throws -> (any OfferStore, String?) {
        switch self {
        case .sqlite:
            let file = path ?? ScratchFolder.sqliteFile("offer-store")
            return (try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), timeout: Self.testStoreTimeout), file)
        case .postgres:
            return (
                try await makeOfferStore(
                    databaseURL: try #require(Self.postgresStoreURL),
                    logger: Logger(label: "test"),
                    timeout: Self.testStoreTimeout
                ), nil
            )
        }
    }
}

@Suite struct StoreTests {
    /// A bundle identifier no other test uses, so tests sharing a PostgreSQL database do not meet.
    let app = "com.example.test-\(UUID().uuidString.prefix(8).lowercased())"

    private func signature(
        _ username: String = "user-1",
        offer: String = "winback_50",
        key: String = "KEY1",
        at timestamp: Int64 = 1_800_000_000_000
    ) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: key,
            bundleIdentifier: app,
            productIdentifier: "com.example.monthly",
            offerIdentifier: offer,
            applicationUsername: username,
            timestamp: timestamp,
            format: "legacy"
        )
    }

    @Test("migrations can run again", arguments: Backend.available)
    func migrationsAreIdempotent(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        try await store.migrate()
        try await store.migrate()
        try await store.ping()
        try await store.close()
    }

    @Test("customer facts round-trip; an unknown customer is nil", arguments: Backend.available)
    func factsRoundTrip(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "User-1")
        #expect(try await store.customerFacts(for: key) == nil)
        let expires = Date(timeIntervalSince1970: 1_800_000_000)
        let grant = CustomerServiceGrant(
            productIdentifier: "p",
            offerIdentifier: "o",
            grantedBy: "alice",
            grantedAt: expires,
            expiresAt: expires + 86_400
        )
        try await store.updateCustomer(key) { facts in
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "g",
                    productIdentifier: "p",
                    originalTransactionId: "1000000000000001",
                    state: .expired,
                    autoRenewEnabled: false,
                    expiresDate: expires,
                    renewalCount: 3,
                    hadIntroductoryOffer: true,
                    expirationIntent: 1
                )
            ]
            facts.flags["churnRisk"] = "high"
            facts.storefront = "USA"
            facts.grants = [grant]
        }
        let facts = try #require(try await store.customerFacts(for: key))
        #expect(facts.key.applicationUsername == "user-1")
        #expect(facts.subscriptions.first?.expiresDate == expires)
        #expect(facts.subscriptions.first?.renewalCount == 3)
        #expect(facts.subscriptions.first?.state == .expired)
        #expect(facts.flags == ["churnRisk": "high"])
        #expect(facts.grants == [grant])
        #expect(try await store.customers(withOriginalTransactionId: "1000000000000001").contains(key))
        try await store.close()
    }

    @Test(
        "a notification's binding reads: an original transaction's holders by app then name, a stranger's facts as none",
        arguments: Backend.available
    )
    func bindingReads(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let original = "\(3_000_000_000 + Int.random(in: 0..<1_000_000))"
        let claim = TransactionClaim(environment: "Sandbox", originalTransactionId: original)
        // Names of their own: a PostgreSQL database keeps the customers of earlier runs.
        let run = UUID().uuidString.lowercased()
        let holders = [
            CustomerKey(bundleIdentifier: "com.example.zeta", applicationUsername: "ann-\(run)"),
            CustomerKey(bundleIdentifier: "com.example.alpha", applicationUsername: "zed-\(run)"),
        ]
        for key in holders {
            try await store.updateCustomer(key, claiming: [claim]) { facts in
                facts.storefront = "FRA"
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
        #expect(try await store.customers(withOriginalTransactionId: original) == holders.reversed())
        #expect(try await store.customers(withOriginalTransactionId: "9\(original)").isEmpty)
        #expect(try await store.customerFacts(for: holders[0])?.storefront == "FRA")
        #expect(try await store.customerFacts(for: CustomerKey(bundleIdentifier: "com.example.alpha", applicationUsername: "nobody")) == nil)
        // Both at once, as one read: the same answers.
        let both = try await store.bindingRead(originalTransactionId: original, candidate: holders[0])
        #expect(both.owners == holders.reversed())
        #expect(both.candidateFacts?.storefront == "FRA" && both.candidateFacts?.subscriptions.map(\.originalTransactionId) == [original])
        let stranger = try await store.bindingRead(
            originalTransactionId: "9\(original)",
            candidate: CustomerKey(bundleIdentifier: "com.example.alpha", applicationUsername: "nobody")
        )
        #expect(stranger.owners.isEmpty && stranger.candidateFacts == nil)
        #expect(try await store.bindingRead(originalTransactionId: original, candidate: nil).owners == holders.reversed())
        #expect(try await store.bindingRead(originalTransactionId: nil, candidate: holders[1]).candidateFacts?.storefront == "FRA")
        try await store.close()
    }

    @Test("concurrent updates of one customer lose nothing", arguments: Backend.available)
    func concurrentUpdates(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "busy")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await store.updateCustomer(key) { facts in
                        if facts.subscriptions.isEmpty {
                            facts.subscriptions = [SubscriptionFacts(subscriptionGroupIdentifier: "g", productIdentifier: "p", state: .active)]
                        }
                        facts.subscriptions[0].renewalCount += 1
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await store.customerFacts(for: key)?.subscriptions.first?.renewalCount == 50)
        try await store.close()
    }

    @Test("a notification is applied once", arguments: Backend.available)
    func notificationsAreIdempotent(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "u")
        let uuid = UUID().uuidString.lowercased()
        let increment: @Sendable (inout CustomerFacts) throws -> Void = { facts in facts.flags["count", default: ""] += "x" }
        #expect(try await store.applyNotification(notificationUUID: uuid, to: key, increment))
        #expect(try await !store.applyNotification(notificationUUID: uuid, to: key, increment))
        #expect(try await store.customerFacts(for: key)?.flags["count"] == "x")
        #expect(try await store.applyNotification(notificationUUID: UUID().uuidString, to: key, increment))
        #expect(try await store.customerFacts(for: key)?.flags["count"] == "xx")
        try await store.close()
    }

    @Test("issued signatures are queried and counted by customer, offer, key and window", arguments: Backend.available)
    func recordAndQuery(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let records = [
            signature("u1", offer: "a", key: "K1", at: 1_000), signature("u1", offer: "a", key: "K2", at: 2_000),
            signature("u1", offer: "b", key: "K2", at: 3_000), signature("u2", offer: "a", key: "K1", at: 4_000),
        ]
        for record in records { try await store.record(record) }
        let u1 = try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, applicationUsername: "U1"))
        #expect(u1.map(\.timestamp) == [3_000, 2_000, 1_000])
        #expect(u1.first == records[2])
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, offerIdentifier: "a")) == 3)
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, keyIdentifier: "K2")) == 2)
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, since: 2_000, until: 4_000)) == 2)
        #expect(try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, limit: 1)).map(\.timestamp) == [4_000])
        try await store.close()
    }

    @Test("a duplicate nonce fails only its own record", arguments: Backend.available)
    func duplicateNonce(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let first = signature()
        try await store.record(first)
        let error = await #expect(throws: OfferStoreError.self) { try await store.record(first) }
        #expect(error?.code == .duplicateNonce)
        try await store.record(signature())
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 2)
        try await store.close()
    }

    @Test("2000 concurrent records are all durable and found", arguments: Backend.available)
    func manyConcurrentRecords(_ backend: Backend) async throws {
        let (store, path) = try await backend.open()
        let records = (0..<2000).map { signature("u\($0 % 7)", at: Int64($0)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for record in records { group.addTask { try await store.record(record) } }
            try await group.waitForAll()
        }
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 2000)
        try await store.close()
        if let path {
            // Reopened from the file: everything acknowledged is there.
            let (reopened, _) = try await backend.open(path: path)
            let found = try await reopened.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, limit: 5000))
            #expect(Set(found.map(\.nonce)) == Set(records.map(\.nonce)))
            try await reopened.close()
        }
    }

    @Test(
        "a nonce submitted twice among concurrent records is recorded once, and one of its two callers gets duplicateNonce",
        arguments: Backend.available
    )
    func duplicatesInsideBatches(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let unique = (0..<1200).map { signature("u\($0 % 5)", at: Int64($0)) }
        // Every 30th record is submitted again right after itself, so that both copies usually share a batch.
        let submissions = unique.enumerated().flatMap { index, record in index % 30 == 0 ? [record, record] : [record] }
        let outcomes = try await withThrowingTaskGroup(of: OfferStoreError.Code?.self) { group in
            for record in submissions {
                group.addTask {
                    do {
                        try await store.record(record)
                        return nil
                    } catch let error as OfferStoreError {
                        return error.code
                    }
                }
            }
            return try await group.reduce(into: [OfferStoreError.Code?]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == .duplicateNonce }.count == submissions.count - unique.count)
        #expect(outcomes.filter { $0 == nil }.count == unique.count)
        let found = try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, limit: 5000))
        #expect(Set(found.map(\.nonce)) == Set(unique.map(\.nonce)))
        try await store.close()
    }

    @Test(
        "every field of a group-commit batch round-trips: request identifiers NULL or not, text with quotes and accents",
        arguments: Backend.available
    )
    func batchFieldsRoundTrip(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let records = (0..<40).map { (index: Int) -> IssuedSignature in
            let retention = index % 2 == 1
            let requestIdentifier: String? = !retention ? nil : index % 3 == 0 ? "" : "request-\(index)"
            let offer = index % 7 == 0 ? "" : "offre-été-\(index % 4)"
            let format = index % 5 == 0 ? "introductory-eligibility" : "legacy"
            return IssuedSignature(
                nonce: UUID().uuidString.lowercased(),
                keyIdentifier: "KEY\(index % 3)",
                bundleIdentifier: app,
                productIdentifier: "com.example.'p\(index % 2)\"",
                offerIdentifier: offer,
                applicationUsername: "user-\(index)",
                timestamp: 1_800_000_000_000 + Int64(index) * 3_600_000,
                format: format,
                channel: retention ? "retention" : "api",
                requestIdentifier: requestIdentifier
            )
        }
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for record in records + [records[1]] {
                group.addTask {
                    do {
                        try await store.record(record)
                        return true
                    } catch let error as OfferStoreError where error.code == .duplicateNonce {
                        return false
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { !$0 }.count == 1)
        let found = try await store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app, limit: 100))
        #expect(Set(found) == Set(records))
        #expect(found.count == records.count)
        try await store.close()
    }

    @Test("audit events round-trip, newest first", arguments: Backend.available)
    func audit(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let marker = UUID().uuidString
        let older = AuditEvent(
            at: Date(timeIntervalSince1970: 4_000_000_000),
            actor: "alice",
            action: "customer.flags",
            target: "\(app)/u",
            details: ["marker": marker]
        )
        let newer = AuditEvent(
            at: Date(timeIntervalSince1970: 4_000_000_001),
            actor: "bob",
            action: "customer.grant",
            target: "\(app)/u",
            details: ["marker": marker]
        )
        try await store.appendAudit(older)
        try await store.appendAudit(newer)
        // A shared PostgreSQL database holds other runs' events too: look at this run's.
        let events = try await store.auditEvents(limit: 1000, since: Date(timeIntervalSince1970: 4_000_000_000)).filter {
            $0.details["marker"] == marker
        }
        #expect(events.map(\.actor) == ["bob", "alice"])
        #expect(
            try await store.auditEvents(limit: 1000, since: Date(timeIntervalSince1970: 4_000_000_001)).filter { $0.details["marker"] == marker }.map(
                \.actor
            ) == ["bob"]
        )
        #expect(events.first?.details == ["marker": marker])
        // Dated 2096 to be the newest, they would stay the newest of a shared database for every later run and
        // crowd other tests' `/admin/audit?limit=` views: this run's two go again.
        let sqlStore = try #require(store as? SQLOfferStore)
        try await sqlStore.backend.write { database in
            try await database.delete(from: "audit_events").where("id", .in, [older.id, newer.id]).run()
        }
        #expect(
            try await store.auditEvents(limit: 1000, since: Date(timeIntervalSince1970: 4_000_000_000)).filter { $0.details["marker"] == marker }
                .isEmpty
        )
        try await store.close()
    }

    @Test(
        "bad database URLs are typed errors without the password",
        arguments: [
            "mysql://u:sekrit-password@h/db", "postgres://:sekrit-password@/db", "sqlite:", "postgres://u:sekrit-password@h/db?sslmode=bogus",
            "nonsense",
        ]
    )
    func badURLs(_ url: String) async {
        let error = await #expect(throws: OfferStoreError.self) { _ = try await makeOfferStore(databaseURL: url, logger: Logger(label: "t")) }
        #expect(error?.code == .invalidDatabaseURL)
        #expect(error?.message.contains("sekrit") == false)
    }
}
