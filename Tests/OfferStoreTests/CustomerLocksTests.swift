import Foundation
import Logging
import OfferModel
import Testing

@testable import OfferStore

/// ``CustomerLocks``: one decision at a time per customer in a process that alone decides for its store, with the
/// record made durable by the group commit before the lock passes on.
@Suite struct CustomerLocksTests {
    let app = "com.example.locks-\(UUID().uuidString.prefix(8).lowercased())"

    private func signature(_ key: CustomerKey) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: key.bundleIdentifier,
            productIdentifier: "com.example.monthly",
            offerIdentifier: "capped",
            applicationUsername: key.applicationUsername,
            timestamp: Date().unixMilliseconds,
            format: "legacy"
        )
    }

    @Test(
        """
        only a store this process alone writes has customer locks: a server's SQLite file and one in memory; not a file the tools opened, nor \
        PostgreSQL
        """
    )
    func whoHasThem() async throws {
        let file = ScratchFolder.sqliteFile("offer-store-locks")
        let served = try #require(
            try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), exclusive: true) as? any CustomerLockingStore
        )
        #expect(served.customerLocks != nil)
        let tool = try #require(try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test")) as? any CustomerLockingStore)
        #expect(tool.customerLocks == nil)
        try await tool.close()
        try await served.close()
        let memory = try #require(
            try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test")) as? any CustomerLockingStore
        )
        #expect(memory.customerLocks != nil)
        try await memory.close()
        if Backend.postgresURL != nil {
            let (postgres, _) = try await Backend.postgres.open()
            #expect((postgres as? any CustomerLockingStore)?.customerLocks == nil)
            try await postgres.close()
        }
    }

    @Test("64 concurrent decisions for a cap of 1 under the customer's lock record exactly one signature, ten times over")
    func capHolds() async throws {
        let file = ScratchFolder.sqliteFile("offer-store-locks")
        let store = try #require(
            try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), exclusive: true) as? any CustomerLockingStore
        )
        let locks = try #require(store.customerLocks)
        for round in 0..<10 {
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: "racer-\(round)")
            let signed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<64 {
                    let record = signature(key)
                    group.addTask {
                        try await locks.withLock(key) {
                            let issued = try await store.customerSnapshot(key, issuedSince: 0).issued
                            // The decision takes a moment (signing does): without the lock, others read the same count meanwhile.
                            try await Task.sleep(for: .milliseconds(1))
                            guard issued.isEmpty else { return false }
                            try await store.record(record)
                            return true
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(signed == 1, "round \(round)")
        }
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 10)
        #expect(locks.heldCount == 0)
        try await store.close()
    }

    @Test(
        "the snapshot reads a customer's facts, their text and their signatures since a time, newest first: in memory and on a file",
        arguments: [false, true]
    )
    func snapshot(onFile: Bool) async throws {
        let url = onFile ? "sqlite:\(ScratchFolder.sqliteFile("offer-store-locks"))" : "sqlite::memory:"
        let opened = try await makeOfferStore(databaseURL: url, logger: Logger(label: "test"), exclusive: onFile)
        let store = try #require(opened as? any CustomerLockingStore)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "known")
        let unknown = try await store.customerSnapshot(key, issuedSince: 0)
        #expect(unknown.facts == nil && unknown.storedFacts == nil && unknown.issued.isEmpty)
        _ = try await store.updateCustomer(key) { $0.storefront = "USA" }
        var old = signature(key)
        old.timestamp = 1_000
        var new = signature(key)
        new.timestamp = 3_000
        new.requestIdentifier = "request-1"
        var other = signature(CustomerKey(bundleIdentifier: app, applicationUsername: "someone-else"))
        other.timestamp = 3_000
        for record in [old, new, other] { try await store.record(record) }
        let snapshot = try await store.customerSnapshot(key, issuedSince: 2_000)
        #expect(snapshot.facts?.storefront == "USA")
        #expect(snapshot.facts == (try await store.customerFacts(for: key)))
        #expect(try StoreCoding.decode(CustomerFacts.self, from: try #require(snapshot.storedFacts)) == snapshot.facts)
        #expect(snapshot.issued == [new])
        #expect(try await store.customerSnapshot(key, issuedSince: .min).issued == [new, old])
        try await store.close()
        if onFile {  // a closed store's readers refuse
            await #expect(throws: OfferStoreError.self) { try await store.customerSnapshot(key, issuedSince: 0) }
        }
    }
}
