import Foundation
import Logging
import OfferModel
import SQLKit
import Synchronization
import Testing

@testable import OfferStore

/// One server to a SQLite file (``SQLiteFileLock``), and a bounded wait for a file another process has locked.
@Suite struct SQLiteFileLockTests {
    let app = "com.example.test-\(UUID().uuidString.prefix(8).lowercased())"

    @Test("a second lock on a SQLite file is refused with the holder's PID; once released it can be taken again")
    func secondLockIsRefused() throws {
        let file = ScratchFolder.sqliteFile("lock")
        #expect(FileManager.default.createFile(atPath: file, contents: nil))
        let first = try SQLiteFileLock(databasePath: file)
        #expect(first.path.hasSuffix(".sqlite.lock"))
        let error = #expect(throws: OfferStoreError.self) { try SQLiteFileLock(databasePath: file) }
        #expect(error?.code == .storeInUse)
        #expect(error?.message.contains("PID \(getpid())") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains(file) == true)
        // Another name of the same file takes the same lock.
        let link = ScratchFolder.sqliteFile("lock-link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
        #expect(throws: OfferStoreError.self) { try SQLiteFileLock(databasePath: link) }
        first.release()
        let again = try SQLiteFileLock(databasePath: link)
        again.release()
        again.release()  // twice is harmless
    }

    @Test("a server's store takes its SQLite file: a second server's is refused, a tool's opens beside it and reads")
    func serverStoreHoldsTheFile() async throws {
        let file = ScratchFolder.sqliteFile("serve")
        let server = try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), exclusive: true)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "lock-user")
        try await server.updateCustomer(key) { $0.grants = [] }
        do {
            _ = try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), exclusive: true)
            Issue.record("a second server opened the file")
        } catch let error as OfferStoreError {
            #expect(error.code == .storeInUse)
            #expect(error.message.contains("PID \(getpid())"))
        }
        let tool = try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), migrating: false)
        #expect(try await tool.customerFacts(for: key) != nil)
        try await tool.close()
        try await server.close()
        // Closed, the file is free for the next server.
        let next = try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), exclusive: true)
        try await next.close()
    }

    @Test(
        """
        a write waits at most the store timeout for a lock another connection holds on the file, then fails unavailable; writes queued behind \
        it do not wait in turn
        """
    )
    func lockedFileIsBounded() async throws {
        let file = ScratchFolder.sqliteFile("busy")
        let store = try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test"), timeout: .milliseconds(300))
        let other = try #require(try await makeOfferStore(databaseURL: "sqlite:\(file)", logger: Logger(label: "test")) as? SQLOfferStore)
        let key = CustomerKey(bundleIdentifier: app, applicationUsername: "busy-user")
        try await store.record(signature())
        // Another connection (as another process would) holds the file's write lock.
        let holding = Mutex(false)
        let release = Mutex(false)
        let holder = Task {
            try await other.backend.write { database in
                try await database.run("BEGIN IMMEDIATE")
                holding.withLock { $0 = true }
                while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
                try await database.run("ROLLBACK")
            }
        }
        while !holding.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }

        for (what, call) in [
            ("a customer's update", { @Sendable in _ = try await store.updateCustomer(key) { $0.grants = [] } }),
            ("a record through the group commit", { @Sendable in try await store.record(signature()) }),
        ] as [(String, @Sendable () async throws -> Void)] {
            let start = ContinuousClock.now
            do {
                try await call()
                Issue.record("\(what) was written while the file was locked")
            } catch let error as OfferStoreError {
                #expect(error.code == .unavailable, "\(what): \(error)")
            }
            let took = ContinuousClock.now - start
            #expect(took >= .milliseconds(250) && took < .seconds(1), "\(what): failed after \(took)")
        }

        // Writes queued behind one that waits for the lock do not wait in turn: each gives up within twice the bound.
        let took = await withTaskGroup(of: Duration.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let start = ContinuousClock.now
                    _ = try? await store.updateCustomer(CustomerKey(bundleIdentifier: app, applicationUsername: "queued-\(index)")) { $0.grants = [] }
                    return ContinuousClock.now - start
                }
            }
            return await group.reduce(into: [Duration]()) { $0.append($1) }
        }
        #expect(took.count == 8 && took.allSatisfy { $0 < .milliseconds(1200) }, "queued writes failed after \(took.max() ?? .zero)")

        release.withLock { $0 = true }
        try await holder.value
        try await store.updateCustomer(key) { $0.grants = [] }
        try await store.record(signature())
        try await other.close()
        try await store.close()
    }

    private func signature() -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: app,
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            applicationUsername: "user-1",
            timestamp: 1_800_000_000_000,
            format: "legacy"
        )
    }
}
