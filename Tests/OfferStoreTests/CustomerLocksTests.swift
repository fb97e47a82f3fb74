import Foundation
import Logging
import OfferModel
import Testing

@testable import OfferStore

/// ``CustomerLocks``: one decision at a time per customer in a process that alone decides for its store, with the
/// record made durable by the group commit before the lock passes on.
@Suite struct CustomerLocksTests {
    let app = "com.example.locks-\(UUID().uuidString.prefix(8).lowercased())"

    /// The store at `url` as a ``CustomerLockingStore`` (`exclusive`: held as a server holds it).
    private func lockingStore(_ url: String, exclusive: Bool = false) async throws -> any CustomerLockingStore {
        try #require(try await makeOfferStore(databaseURL: url, logger: Logger(label: "test"), exclusive: exclusive) as? any CustomerLockingStore)
    }

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

    @Test("a lock taken at once is refused while held, passes to a waiter when unlocked, and is free after it")
    func lockIfFree() async throws {
        let locks = CustomerLocks()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "at-once")
        let other = CustomerKey(bundleIdentifier: app, applicationUsername: "someone-else")
        #expect(locks.lockIfFree(key))
        #expect(!locks.lockIfFree(key))
        #expect(locks.lockIfFree(other))
        locks.unlock(other)
        let (waiting, waiter) = AsyncStream<Void>.makeStream()
        let waited = Task {
            try await locks.withLock(key) {
                waiter.yield()
                // Held by the waiter now: not free at once.
                #expect(!locks.lockIfFree(key))
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(locks.heldCount == 1)
        locks.unlock(key)
        var iterator = waiting.makeAsyncIterator()
        _ = await iterator.next()
        try await waited.value
        #expect(locks.heldCount == 0)
        #expect(locks.lockIfFree(key))
        locks.unlock(key)
    }

    @Test(
        "SQLite: a snapshot is read at once only on a file a server holds, with a reader free; the same as the one waited for"
    )
    func snapshotAtOnce() async throws {
        let file = ScratchFolder.sqliteFile("offer-store-at-once")
        let server = try await lockingStore("sqlite:\(file)", exclusive: true)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "read-at-once")
        try await server.updateCustomer(key) { $0.storefront = "GBR" }
        try await server.record(signature(key))
        let atOnce = try #require(server.customerSnapshotAtOnce(key, issuedSince: 0)).get()
        let waited = try await server.customerSnapshot(key, issuedSince: 0)
        #expect(atOnce.facts == waited.facts && atOnce.facts?.storefront == "GBR")
        #expect(atOnce.storedFacts == waited.storedFacts)
        #expect(atOnce.issued.map(\.nonce) == waited.issued.map(\.nonce) && atOnce.issued.count == 1)
        // A thousand reads of as many customers, with and without facts or signatures: the statements prepared once
        // are never prepared again (clearing their bindings made SQLite do so at every read).
        for index in 0..<1_000 {
            let other = CustomerKey(bundleIdentifier: app, applicationUsername: "reader-\(index)")
            if index % 3 == 0 { try await server.updateCustomer(other) { $0.storefront = index % 2 == 0 ? "USA" : "FRA" } }
            _ = try #require(server.customerSnapshotAtOnce(other, issuedSince: Int64(index))).get()
            _ = try await server.customerSnapshot(other, issuedSince: index % 2 == 0 ? 0 : .min)
        }
        let readers = try #require(((server as? SQLOfferStore)?.backend as? SQLiteBackend)?.customerReaders)
        #expect(readers.repreparations == 0)
        let memory = try await lockingStore("sqlite::memory:")
        #expect(memory.customerSnapshotAtOnce(key, issuedSince: 0) == nil)
        try await memory.close()
        try await server.close()
    }

    @Test(
        "customer locks: a server's SQLite file, one in memory, PostgreSQL (whose batches check each record); not a file the tools opened"
    )
    func whoHasThem() async throws {
        let file = ScratchFolder.sqliteFile("offer-store-locks")
        let served = try await lockingStore("sqlite:\(file)", exclusive: true)
        #expect(served.customerLocks != nil)
        let tool = try await lockingStore("sqlite:\(file)")
        #expect(tool.customerLocks == nil)
        try await tool.close()
        try await served.close()
        let memory = try await lockingStore("sqlite::memory:")
        #expect(memory.customerLocks != nil)
        try await memory.close()
        if Backend.postgresURL != nil {
            let (postgres, _) = try await Backend.postgres.open()
            #expect((postgres as? any CustomerLockingStore)?.customerLocks != nil)
            // Its reads cross the network: never at once.
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: "read-at-once")
            #expect((postgres as? any CustomerLockingStore)?.customerSnapshotAtOnce(key, issuedSince: 0) == nil)
            try await postgres.close()
        }
    }

    @Test("64 concurrent decisions for a cap of 1 under the customer's lock record exactly one signature, ten times over")
    func capHolds() async throws {
        let file = ScratchFolder.sqliteFile("offer-store-locks")
        let store = try await lockingStore("sqlite:\(file)", exclusive: true)
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
        "the snapshot reads a customer's facts, their text and their signatures since a time, newest first: in memory, on a file, on PostgreSQL",
        arguments: ["memory", "file"] + (Backend.postgresURL == nil ? [] : ["postgres"])
    )
    func snapshot(on place: String) async throws {
        let opened: any OfferStore
        switch place {
        case "postgres": opened = try await Backend.postgres.open().0
        case "file":
            opened = try await makeOfferStore(
                databaseURL: "sqlite:\(ScratchFolder.sqliteFile("offer-store-locks"))",
                logger: Logger(label: "test"),
                exclusive: true
            )
        default: opened = try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
        }
        let onFile = place == "file"
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

    @Test(
        "PostgreSQL: snapshots asked for at once are read in shared statements, and each is its own customer's",
        .enabled(if: Backend.postgresURL != nil)
    )
    func snapshotsTogether() async throws {
        let store = try #require(try await Backend.postgres.open().0 as? any CustomerLockingStore)
        let backend = try #require((store as? SQLOfferStore)?.backend as? PostgresBackend)
        let keys = (0..<40).map { CustomerKey(bundleIdentifier: app, applicationUsername: "customer-\($0)") }
        // Every other customer has facts; customer n has n % 4 signatures, one of them (if any) before the read's time.
        var expected: [CustomerKey: (storefront: String?, issued: Int)] = [:]
        for (number, key) in keys.enumerated() {
            if number.isMultiple(of: 2) { _ = try await store.updateCustomer(key) { $0.storefront = "S\(number)" } }
            for index in 0..<(number % 4) {
                var record = signature(key)
                record.timestamp = index == 0 ? 1_000 : 3_000 + Int64(index)
                try await store.record(record)
            }
            expected[key] = (number.isMultiple(of: 2) ? "S\(number)" : nil, max(0, number % 4 - 1))
        }
        // Each customer three times over, all at once.
        let reads = try await withThrowingTaskGroup(of: (CustomerKey, CustomerLockSnapshot).self) { tasks in
            for key in keys + keys + keys { tasks.addTask { (key, try await store.customerSnapshot(key, issuedSince: 2_000)) } }
            return try await tasks.reduce(into: []) { $0.append($1) }
        }
        #expect(reads.count == 120)
        for (key, snapshot) in reads {
            #expect(snapshot.facts?.storefront == expected[key]?.storefront, "\(key)")
            #expect(snapshot.issued.count == expected[key]?.issued, "\(key)")
            #expect(snapshot.issued.allSatisfy { $0.applicationUsername == key.applicationUsername && $0.timestamp >= 2_000 })
            #expect(snapshot.issued.map(\.timestamp) == snapshot.issued.map(\.timestamp).sorted(by: >))
        }
        #expect(backend.snapshotReads.largestBatch > 1)
        try await store.close()
    }

    /// Two stores on one PostgreSQL database, as two replicas.
    private func replicas() async throws -> (any CustomerLockingStore, any CustomerLockingStore) {
        let first = try #require(try await Backend.postgres.open().0 as? any CustomerLockingStore)
        let second = try #require(try await Backend.postgres.open().0 as? any CustomerLockingStore)
        return (first, second)
    }

    @Test(
        "PostgreSQL: a record decided over a read another replica's signature made stale is refused, not written; one over a fresh read is",
        .enabled(if: Backend.postgresURL != nil)
    )
    func staleDecisionIsRefused() async throws {
        let (first, second) = try await replicas()
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "stale")
        // Both replicas read no signature for the customer; the second records first.
        let readByFirst = try await first.customerSnapshot(key, issuedSince: 0)
        let readBySecond = try await second.customerSnapshot(key, issuedSince: 0)
        #expect(readByFirst.issued.isEmpty && readBySecond.issued.isEmpty)
        let theirs = signature(key)
        #expect(try await second.record(theirs, decidedOver: IssuedRead(customer: key, since: 0, count: readBySecond.issued.count)))
        let stale = signature(key)
        #expect(try await first.record(stale, decidedOver: IssuedRead(customer: key, since: 0, count: readByFirst.issued.count)) == false)
        let query = IssuedSignatureQuery(bundleIdentifier: app, applicationUsername: key.applicationUsername)
        #expect(try await first.issuedSignatures(matching: query).map(\.nonce) == [theirs.nonce])
        // Decided again over a fresh read, it is written; so is one whose read began after the other's signature.
        let fresh = try await first.customerSnapshot(key, issuedSince: 0)
        #expect(fresh.issued == [theirs])
        #expect(try await first.record(signature(key), decidedOver: IssuedRead(customer: key, since: 0, count: fresh.issued.count)))
        var later = signature(key)
        later.timestamp = theirs.timestamp + 60_000
        #expect(try await second.record(later, decidedOver: IssuedRead(customer: key, since: later.timestamp, count: 0)))
        #expect(try await first.countIssuedSignatures(matching: query) == 3)
        try await first.close()
        try await second.close()
    }

    @Test(
        "PostgreSQL: two replicas deciding 64 requests for a cap of 1 under their own locks record exactly one signature, twenty times over",
        .enabled(if: Backend.postgresURL != nil)
    )
    func capHoldsAcrossReplicas() async throws {
        let (first, second) = try await replicas()
        let stores = [first, second]
        for round in 0..<20 {
            let key = CustomerKey(bundleIdentifier: app, applicationUsername: "racer-\(round)")
            let signed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<64 {
                    let store = stores[index % 2]
                    let locks = try #require(store.customerLocks)
                    group.addTask {
                        try await locks.withLock(key) {
                            // Decided again while the record is refused: another replica recorded one meanwhile.
                            while true {
                                let issued = try await store.customerSnapshot(key, issuedSince: 0).issued
                                try await Task.sleep(for: .milliseconds(1))
                                guard issued.isEmpty else { return false }
                                if try await store.record(signature(key), decidedOver: IssuedRead(customer: key, since: 0, count: 0)) { return true }
                            }
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(signed == 1, "round \(round)")
        }
        #expect(try await first.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 20)
        try await first.close()
        try await second.close()
    }
}
