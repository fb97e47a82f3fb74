import Foundation
import Logging
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// PostgreSQL's batch of notifications in two statements (``PostgresNotificationBatch``) writes what filing them one
/// at a time writes, and hands a batch it cannot file alike to the filing one at a time.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct PostgresNotificationBatchTests {
    struct Scenario {
        var app: String
        var originals: [String]
        var filings: [NotificationFiling]
        var customers: [CustomerKey]
    }

    /// Seventeen notifications of `app` and what the store knew before them: new customers redeeming an offer a
    /// signature of theirs made, customers with facts, subscriptions filed under `otid:` keys taken by the token's
    /// customer, a notification seen before whose redemption was recorded, one with neither transaction nor
    /// redemption, an introductory offer without price or identifier.
    private func scenario(on store: SQLOfferStore) async throws -> Scenario {
        let app = "com.example.pgbatch-\(UUID().uuidString.prefix(8).lowercased())"
        let originals = (0..<17).map { _ in "\(Int.random(in: 1_000_000_000_000...9_999_999_999_999))" }
        var filings: [NotificationFiling] = []
        var customers: [CustomerKey] = []
        for index in 0..<17 {
            let original = originals[index]
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: "customer-\(index)")
            customers.append(key)
            var claim = TransactionClaim(environment: "Sandbox", originalTransactionId: original)
            if (8..<12).contains(index) {
                try await store.updateCustomer(key, claiming: []) { facts in facts.flags["tier"] = "gold" }
            }
            if (12..<14).contains(index) {
                let unclaimed = CustomerKey(bundleIdentifier: app, applicationUsername: "otid:\(original)")
                try await store.updateCustomer(unclaimed, claiming: [claim]) { facts in facts.flags["seen"] = "yes" }
                claim.replacing = unclaimed.applicationUsername
            }
            if index < 4 {
                try await store.record(
                    IssuedSignature(
                        nonce: UUID().uuidString.lowercased(),
                        keyIdentifier: "KEY",
                        bundleIdentifier: app,
                        productIdentifier: "com.example.monthly",
                        offerIdentifier: "winback",
                        applicationUsername: key.applicationUsername,
                        timestamp: 1_799_999_000_000 + Int64(index),
                        format: "legacy",
                        channel: index == 3 ? "retention" : "api"
                    )
                )
            }
            let introductory = index == 16
            let redemption = Redemption(
                environment: "Sandbox",
                transactionId: original,
                originalTransactionId: original,
                customer: key,
                productIdentifier: "com.example.monthly",
                offerType: introductory ? 1 : 2,
                offerIdentifier: introductory ? nil : "winback",
                offerDiscountType: introductory ? nil : "PAY_UP_FRONT",
                offerPeriod: "P1M",
                price: introductory ? nil : 1990 + Int64(index),
                currency: introductory ? nil : "USD",
                storefront: introductory ? nil : "USA",
                purchaseDate: 1_800_000_000_000 + Int64(index) * 86_400_000
            )
            let uuid = UUID().uuidString.lowercased()
            if index == 14 {
                _ = try await store.markNotificationProcessed(notificationUUID: uuid)
                _ = try await store.recordRedemption(redemption)
            }
            let transaction = SubscriptionTransaction(
                environment: "Sandbox",
                transactionId: original,
                originalTransactionId: original,
                customer: key,
                productIdentifier: "com.example.monthly",
                subscriptionGroupIdentifier: "g",
                price: index % 2 == 0 ? 1990 : nil,
                currency: index % 2 == 0 ? "USD" : nil,
                purchaseDate: 1_800_000_000_000,
                expiresDate: index % 3 == 0 ? nil : 1_802_000_000_000,
                revocationDate: nil
            )
            filings.append(
                NotificationFiling(
                    notificationUUID: uuid,
                    customer: key,
                    claims: index == 15 ? [] : [claim],
                    transaction: index == 15 ? nil : transaction,
                    redemption: index == 15 ? nil : redemption,
                    event: nil
                ) { facts in
                    facts.flags["count", default: ""] += "x"
                    facts.subscriptions = [
                        SubscriptionFacts(
                            subscriptionGroupIdentifier: "g",
                            productIdentifier: "com.example.monthly",
                            originalTransactionId: original,
                            state: .active
                        )
                    ]
                }
            )
        }
        // The first delivered twice in the batch, and a second notification for customer-1 (the same subscription).
        filings.append(filings[0])
        let second = filings[1]
        filings.append(
            NotificationFiling(
                notificationUUID: UUID().uuidString.lowercased(),
                customer: second.customer,
                claims: second.claims,
                transaction: second.transaction,
                redemption: second.redemption,
                event: nil
            ) { facts in
                facts.flags["count", default: ""] += "x"
                facts.flags["second"] = "yes"
            }
        )
        return Scenario(app: app, originals: originals, filings: filings, customers: customers)
    }

    /// Everything a scenario's notifications wrote, with its app and original transactions named alike.
    private func written(_ scenario: Scenario, on store: SQLOfferStore) async throws -> [String] {
        let originals = scenario.originals.map { "'\($0)'" }.joined(separator: ", ")
        let queries: [String] = [
            """
            SELECT concat_ws('|', environment, transaction_id, original_transaction_id, application_username, product_identifier, offer_type,
              offer_identifier, offer_discount_type, offer_period, price, currency, storefront, purchase_date, signature_nonce IS NULL,
              signature_timestamp, signature_channel, renewed_at, refunded_at, expired_at, period_of) AS line
            FROM redemptions WHERE bundle_identifier = '\(scenario.app)'
            """,
            """
            SELECT concat_ws('|', day, environment, product_identifier, offer_identifier, offer_type, channel, currency, redeemed, attributed,
              renewed, refunded, priced, milliunits) AS line FROM redemption_daily WHERE bundle_identifier = '\(scenario.app)'
            """,
            """
            SELECT concat_ws('|', environment, transaction_id, original_transaction_id, application_username, product_identifier,
              subscription_group_identifier, price, currency, purchase_date, expires_date, revocation_date) AS line
            FROM subscription_transactions WHERE bundle_identifier = '\(scenario.app)'
            """,
            """
            SELECT concat_ws('|', environment, original_transaction_id, application_username) AS line FROM transaction_owners
            WHERE bundle_identifier = '\(scenario.app)'
            """,
            """
            SELECT concat_ws('|', original_transaction_id, application_username) AS line FROM customer_transactions
            WHERE bundle_identifier = '\(scenario.app)'
            """,
            "SELECT concat_ws('|', application_username, 'customer') AS line FROM customers WHERE bundle_identifier = '\(scenario.app)'",
            "SELECT concat_ws('|', count(*), 'originals') AS line FROM redemptions WHERE transaction_id IN (\(originals))",
        ]
        var lines: [String] = []
        for query in queries {
            let rows = try await store.backend.reading { database in
                try await database.raw(SQLQueryString(query)).all(decodingColumn: "line", as: String.self)
            }
            lines += rows.map { line in
                var line = line
                for (index, original) in scenario.originals.enumerated() { line = line.replacingOccurrences(of: original, with: "O\(index)") }
                return line
            }.sorted()
        }
        for key in scenario.customers {
            var facts = try await store.customerFacts(for: key)
            facts?.updatedAt = Date(timeIntervalSince1970: 0)
            facts?.key = CustomerKey(bundleIdentifier: "", applicationUsername: key.applicationUsername)
            let text = try facts.map { try StoreCoding.encode($0) } ?? "none"
            var line = "\(key.applicationUsername): \(text)"
            for (index, original) in scenario.originals.enumerated() { line = line.replacingOccurrences(of: original, with: "O\(index)") }
            lines.append(line)
        }
        return lines
    }

    @Test("a batch in two statements writes what filing it a notification at a time writes, and tells each the same")
    func writesWhatOneByOneWrites() async throws {
        let store = try #require(try await Backend.postgres.open().0 as? SQLOfferStore)
        let filer = try #require(store.backend.notificationBatchFiler)
        let batched = try await scenario(on: store)
        let alone = try await scenario(on: store)
        let batchedPending = batched.filings.map(PendingFiling.init)
        let alonePending = alone.filings.map(PendingFiling.init)
        #expect(PostgresNotificationBatch.fits(batchedPending))

        let filed = try await store.backend.transaction { database in try await filer(batchedPending, database) }
        let errors = try await SQLOfferStore.fileOneByOne(alonePending, backend: store.backend)
        #expect(errors.allSatisfy { $0 == nil })
        #expect(filed.map { Optional($0) } == alonePending.map(\.filed))
        #expect(filed.count { $0.applied } == 17)
        #expect(filed[17] == NotificationFiled(applied: false, redemption: .duplicate))
        #expect(filed[18] == NotificationFiled(applied: true, redemption: .duplicate))
        #expect(filed[0].redemption == .recorded(channel: "app"))
        #expect(filed[3].redemption == .recorded(channel: "retention"))
        #expect(filed[5].redemption == .recorded(channel: nil))
        #expect(filed[14] == NotificationFiled(applied: false, redemption: .duplicate))
        #expect(filed[15] == NotificationFiled(applied: true, redemption: nil))
        let written = try await written(batched, on: store)
        #expect(written == (try await self.written(alone, on: store)))
        #expect(written.contains { $0.hasPrefix("Sandbox|O12|customer-12") })
        let twice = try await store.customerFacts(for: batched.customers[1])
        #expect(twice?.flags["count"] == "xx" && twice?.flags["second"] == "yes")

        // Filed again: each seen before, nothing written twice.
        let again = try await store.backend.transaction { database in try await filer(batched.filings.map(PendingFiling.init), database) }
        #expect(again.allSatisfy { !$0.applied && ($0.redemption == nil || $0.redemption == .duplicate) })
        #expect(try await self.written(batched, on: store) == written)
        try await store.close()
    }

    @Test("a burst through the store, each notification delivered twice, takes the two statements and files each once")
    func aBurstWithDuplicatesTakesTheTwoStatements() async throws {
        let store = try #require(try await Backend.postgres.open().0 as? SQLOfferStore)
        let backend = try #require(store.backend as? PostgresBackend)
        let scenario = try await scenario(on: store)
        let filings = Array(scenario.filings.prefix(17))
        let filed = try await withThrowingTaskGroup(of: (Int, NotificationFiled).self, returning: [Int: [NotificationFiled]].self) { group in
            for (index, filing) in (filings + filings).enumerated() {
                group.addTask { (index % filings.count, try await store.fileNotification(filing)) }
            }
            return try await group.reduce(into: [:]) { $0[$1.0, default: []].append($1.1) }
        }
        #expect(backend.notificationBatchesFiled > 0)
        for (index, outcomes) in filed {
            // Index 14 was seen before the burst: neither delivery applies it.
            #expect(outcomes.count { $0.applied } == (index == 14 ? 0 : 1))
            if filings[index].redemption != nil {
                #expect(outcomes.count { $0.redemption == .duplicate } == (index == 14 ? 2 : 1))
            }
        }
        for key in scenario.customers where key.applicationUsername != "customer-14" {
            #expect(try await store.customerFacts(for: key)?.flags["count"] == "x")
        }
        try await store.close()
    }

    @Test("two replicas filing the same burst at once: each notification folded in once, its redemption recorded once")
    func twoReplicasFileEachOnce() async throws {
        let first = try #require(try await Backend.postgres.open().0 as? SQLOfferStore)
        let second = try #require(try await Backend.postgres.open().0 as? SQLOfferStore)
        let scenario = try await scenario(on: first)
        let filings = Array(scenario.filings.prefix(17))
        let outcomes = await withTaskGroup(of: (Int, NotificationFiled?).self, returning: [Int: [NotificationFiled?]].self) { group in
            for (index, filing) in filings.enumerated() {
                for store in [first, second] {
                    // A batch that deadlocks with the other replica's fails its notifications: the App Store retries them.
                    group.addTask { (index, try? await store.fileNotification(filing)) }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0, default: []].append($1.1) }
        }
        for (index, filing) in filings.enumerated() {
            let results = try #require(outcomes[index])
            #expect(results.count { $0?.applied == true } <= 1)
            #expect(results.count { $0?.redemption.map { $0 != .duplicate } == true } <= 1)
            // Retried until it is filed: told it was seen, unless neither delivery went through.
            let retried = try await first.fileNotification(filing)
            #expect(retried.applied == (index != 14 && !results.contains { $0?.applied == true }))
            if index != 14 {
                #expect(try await first.customerFacts(for: filing.customer)?.flags["count"] == "x")
            }
        }
        try await first.close()
        try await second.close()
    }

    @Test("a redemption of a subscription with an event recorded before, or a subscription another customer holds, is filed one by one")
    func whatItCannotDoAlikeGoesOneByOne() async throws {
        let store = try #require(try await Backend.postgres.open().0 as? SQLOfferStore)
        let filer = try #require(store.backend.notificationBatchFiler)
        let first = try await scenario(on: store)
        // A renewal that came before the redemption it follows.
        let renewed = try #require(first.filings[0].redemption)
        _ = try await store.recordSubscriptionEvent(
            SubscriptionEvent(
                environment: "Sandbox",
                originalTransactionId: renewed.originalTransactionId,
                kind: .renewed,
                at: renewed.purchaseDate + 30 * 86_400_000,
                transactionId: "\(renewed.originalTransactionId)-2"
            )
        )
        let batch = first.filings.map(PendingFiling.init)
        await #expect(throws: (any Error).self) { try await store.backend.transaction { database in try await filer(batch, database) } }
        // Rolled back whole: the store files the batch one by one, and the redemption is told what that found.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for filing in first.filings { group.addTask { _ = try await store.fileNotification(filing) } }
            try await group.waitForAll()
        }
        let redemption = try #require(first.filings[0].redemption)
        #expect(try await store.recordRedemption(redemption) == .duplicate)
        let facts = try await store.customerFacts(for: first.customers[0])
        #expect(facts?.flags["count"] == "x")

        // Another customer's subscription: that notification fails alone.
        let second = try await scenario(on: store)
        var filings = second.filings
        let taken = CustomerKey(bundleIdentifier: second.app, applicationUsername: "someone-else")
        let original = second.originals[6]
        try await store.updateCustomer(taken, claiming: [TransactionClaim(environment: "Sandbox", originalTransactionId: original)]) { _ in }
        filings[6].claims = [TransactionClaim(environment: "Sandbox", originalTransactionId: original)]
        let results = await withTaskGroup(of: (Int, Bool).self, returning: [Int: Bool].self) { group in
            for (index, filing) in filings.enumerated() {
                group.addTask {
                    do {
                        _ = try await store.fileNotification(filing)
                        return (index, true)
                    } catch let error as OfferStoreError {
                        return (index, error.code != .transactionClaimed)
                    } catch {
                        return (index, true)
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(results[6] == false)
        let othersFiled = results.filter { $0.key != 6 }.values.allSatisfy { $0 }
        #expect(othersFiled)
        // Nothing of it was written: not its facts, not its UUID (a retry is filed again, and refused again).
        #expect(try await store.customerFacts(for: second.customers[6]) == nil)
        #expect(try await store.customers(withOriginalTransactionId: original).isEmpty)
        #expect(try await store.markNotificationProcessed(notificationUUID: filings[6].notificationUUID))
        #expect(try await store.customerFacts(for: second.customers[7])?.flags["count"] == "x")
        try await store.close()
    }
}
