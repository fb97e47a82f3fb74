import Foundation
import OfferModel
import Testing

@testable import OfferStore

/// Notifications filed at once share a batch (``OfferStore/fileNotification(_:)``): on a SQLite file through
/// statements prepared once, on PostgreSQL in one transaction. Each is still filed once, alone when it fails, and
/// written before its caller hears back.
@Suite struct NotificationBatchTests {
    /// A bundle identifier no other test uses, so tests sharing a PostgreSQL database do not meet.
    let app = "com.example.batch-\(UUID().uuidString.prefix(8).lowercased())"

    struct FoldRefused: Error {}

    /// One notification for `customer`: claims `original`, counts itself in the facts' `count` flag, redeems an offer.
    private func filing(
        _ uuid: String,
        customer: String,
        original: String,
        refuse: Bool = false
    ) -> NotificationFiling {
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: customer)
        return NotificationFiling(
            notificationUUID: uuid,
            customer: key,
            claims: [TransactionClaim(environment: "Sandbox", originalTransactionId: original)],
            transaction: nil,
            redemption: Redemption(
                environment: "Sandbox",
                transactionId: original,
                originalTransactionId: original,
                customer: key,
                productIdentifier: "com.example.monthly",
                offerType: 2,
                offerIdentifier: "winback",
                offerDiscountType: "PAY_UP_FRONT",
                offerPeriod: "P1M",
                price: 1990,
                currency: "USD",
                storefront: "USA",
                purchaseDate: 1_800_000_000_000
            ),
            event: nil
        ) { facts in
            if refuse { throw FoldRefused() }
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
    }

    private func otid() -> String { "\(Int.random(in: 1_000_000_000_000...9_999_999_999_999))" }

    @Test("a burst of 96 with every notificationUUID twice: each applied once, its twin told it was seen", arguments: Backend.available)
    func duplicatesInABurstAreFiledOnce(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let notifications = (0..<48).map { index in (UUID().uuidString.lowercased(), "customer-\(index)", otid()) }
        let filed = try await withThrowingTaskGroup(of: NotificationFiled.self, returning: [NotificationFiled].self) { group in
            for (uuid, customer, original) in notifications + notifications {
                group.addTask { try await store.fileNotification(filing(uuid, customer: customer, original: original)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(filed.count { $0.applied } == 48)
        #expect(filed.count { !$0.applied } == 48)
        // The redemption is recorded once too; its second filing is told it was recorded before.
        #expect(filed.count { $0.redemption == .duplicate } == 48)
        for (_, customer, original) in notifications {
            let facts = try #require(try await store.customerFacts(for: CustomerKey(bundleIdentifier: app, applicationUsername: customer)))
            #expect(facts.flags["count"] == "x")
            #expect(facts.subscriptions.first?.originalTransactionId == original)
        }
        try await store.close()
    }

    @Test("in a burst, notifications whose fold fails are rolled back alone; the others of their batch are written", arguments: Backend.available)
    func aFailingNotificationLosesNoOther(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let notifications = (0..<64).map { index in (UUID().uuidString.lowercased(), "customer-\(index)", otid(), index % 5 == 2) }
        let results = await withTaskGroup(
            of: (Int, Result<NotificationFiled, any Error>).self,
            returning: [Int: Result<NotificationFiled, any Error>].self
        ) {
            group in
            for (index, (uuid, customer, original, refuse)) in notifications.enumerated() {
                group.addTask {
                    do {
                        return (
                            index, .success(try await store.fileNotification(filing(uuid, customer: customer, original: original, refuse: refuse)))
                        )
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, (uuid, customer, original, refuse)) in notifications.enumerated() {
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: customer)
            switch try #require(results[index]) {
            case .success(let filed):
                #expect(!refuse)
                #expect(filed.applied)
                #expect(try await store.customerFacts(for: key)?.flags["count"] == "x")
                #expect(try await store.customers(withOriginalTransactionId: original) == [key])
            case .failure(let error):
                #expect(refuse)
                #expect(error is FoldRefused)
                // Nothing of it was written: not its UUID (a retry is applied), not its claim, not its facts.
                #expect(try await store.customerFacts(for: key) == nil)
                #expect(try await store.customers(withOriginalTransactionId: original).isEmpty)
                #expect(try await store.fileNotification(filing(uuid, customer: customer, original: original)).applied)
            }
        }
        try await store.close()
    }

    @Test("every notification answered is in the file: a second store opened on it sees each, and takes none again")
    func answeredMeansWritten() async throws {
        let (store, path) = try await Backend.sqlite.open()
        let notifications = (0..<80).map { index in (UUID().uuidString.lowercased(), "customer-\(index)", otid()) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (uuid, customer, original) in notifications {
                group.addTask {
                    let filed = try await store.fileNotification(filing(uuid, customer: customer, original: original))
                    #expect(filed.applied)
                }
            }
            try await group.waitForAll()
        }
        // The first store still open: nothing is read through its connections or its caches.
        let file: String = try #require(path)
        let (second, _) = try await Backend.sqlite.open(path: file)
        for (uuid, customer, original) in notifications {
            #expect(try await second.customerFacts(for: CustomerKey(bundleIdentifier: app, applicationUsername: customer))?.flags["count"] == "x")
            #expect(try await !second.fileNotification(filing(uuid, customer: customer, original: original)).applied)
        }
        try await second.close()
        try await store.close()
    }
}
