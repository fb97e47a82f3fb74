import Foundation
import Logging
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// The SQLite file's group-commit writer on its own: what it refuses, and that a failure leaves it usable.
@Suite struct SQLiteLogWriterTests {
    /// A SQLite file whose `issued_signatures` has the store's columns and unique key, plus a CHECK that refuses a
    /// product named `refused` — an error of another kind than a duplicate.
    private func database() async throws -> (SQLiteBackend, String) {
        let path = ScratchFolder.sqliteFile("log-writer")
        let backend = try await SQLiteBackend(path: path, logger: Logger(label: "test"))
        try await backend.write { database in
            try await database.run(
                """
                CREATE TABLE issued_signatures (
                    nonce TEXT NOT NULL, key_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL,
                    product_identifier TEXT NOT NULL CHECK (product_identifier <> 'refused'), offer_identifier TEXT NOT NULL,
                    application_username TEXT NOT NULL, timestamp INTEGER NOT NULL, format TEXT NOT NULL,
                    channel TEXT NOT NULL DEFAULT 'api', request_identifier TEXT, UNIQUE (timestamp, nonce))
                """
            )
            try await database.run("CREATE TABLE stored_answers (answer_key TEXT PRIMARY KEY, answer TEXT NOT NULL, created_at INTEGER NOT NULL)")
            // The rollup the writer keeps (schema version 11).
            try await database.run(IssuedRollup.migration(bigint: .bigint)[0])
        }
        return (backend, path)
    }

    private func record(product: String = "com.example.monthly", username: String = "user", at timestamp: Int64) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: "com.example.app",
            productIdentifier: product,
            offerIdentifier: "offer",
            applicationUsername: username,
            timestamp: timestamp,
            format: "legacy"
        )
    }

    private func rows(_ backend: SQLiteBackend) async throws -> [String] {
        try await backend.read { database in
            try await database.raw("SELECT application_username FROM issued_signatures ORDER BY timestamp")
                .all(decodingColumn: "application_username", as: String.self)
        }
    }

    /// `issued_daily`'s counts, by day.
    private func daily(_ backend: SQLiteBackend) async throws -> [Int] {
        try await backend.read { database in
            try await database.raw("SELECT issued FROM issued_daily ORDER BY day").all(decodingColumn: "issued", as: Int.self)
        }
    }

    @Test("a record written before fails alone; an empty customer name is stored as empty, not NULL; the day's count is of the records written")
    func duplicatesFailAlone() async throws {
        let (backend, path) = try await database()
        let writer = SQLiteLogWriter(path: path)
        let first = record(username: "", at: 1)
        #expect(try await writer.write([first]).allSatisfy { $0 == nil })
        let outcomes = try await writer.write([record(at: 2), first, record(at: 3)])
        #expect(outcomes[0] == nil && outcomes[2] == nil)
        #expect((outcomes[1] as? OfferStoreError)?.code == .duplicateNonce)
        #expect(try await rows(backend) == ["", "user", "user"])
        #expect(try await daily(backend) == [3])
        #expect(try await writer.write([record(at: 86_400_000 + 1), record(at: 86_400_000 + 2)]).allSatisfy { $0 == nil })
        #expect(try await daily(backend) == [3, 2])
        await writer.close()
        try await backend.close()
    }

    @Test("any other refusal fails the whole batch, writes none of it, and the next batch is written")
    func otherErrorsRollBack() async throws {
        let (backend, path) = try await database()
        let writer = SQLiteLogWriter(path: path)
        let error = await #expect(throws: OfferStoreError.self) {
            _ = try await writer.write([self.record(at: 1), self.record(product: "refused", at: 2)])
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("CHECK constraint failed") == true)
        #expect(try await rows(backend).isEmpty)
        #expect(try await daily(backend).isEmpty)
        #expect(try await writer.write([record(username: "after", at: 3)]).allSatisfy { $0 == nil })
        #expect(try await rows(backend) == ["after"])
        #expect(try await daily(backend) == [1])
        await writer.close()
        let closed = await #expect(throws: OfferStoreError.self) { _ = try await writer.write([self.record(at: 4)]) }
        #expect(closed?.code == .unavailable)
        try await backend.close()
    }

    private func answers(_ backend: SQLiteBackend) async throws -> [String] {
        try await backend.read { database in
            try await database.raw("SELECT answer_key FROM stored_answers ORDER BY answer_key").all(decodingColumn: "answer_key", as: String.self)
        }
    }

    @Test(
        """
        claims in one batch: a key answered before writes nothing, a signature recorded before undoes its claim alone, the rest are stored and \
        counted
        """
    )
    func claims() async throws {
        let (backend, path) = try await database()
        let writer = SQLiteLogWriter(path: path)
        let recorded = record(username: "recorded", at: 1)
        #expect(try await writer.write([recorded]).allSatisfy { $0 == nil })
        let claim = { @Sendable (key: String, record: IssuedSignature) in
            AnswerClaim(answerKey: key, answer: "{\"\(key)\":1}", createdAt: 5, record: record)
        }
        let outcomes = try await writer.queueSync {
            try writer.claimOnQueue([
                claim("a", self.record(username: "first", at: 2)),
                claim("a", self.record(username: "retry", at: 3)),  // the same key again, in the same batch
                claim("b", recorded),  // its signature was recorded before
                claim("c", self.record(username: "third", at: 4)),
            ])
        }
        #expect(outcomes[0] == nil && outcomes[3] == nil)
        #expect(outcomes[1] is AnswerAlreadyStored)
        #expect((outcomes[2] as? OfferStoreError)?.code == .duplicateNonce)
        #expect(try await answers(backend) == ["a", "c"])
        #expect(try await rows(backend) == ["recorded", "first", "third"])
        #expect(try await daily(backend) == [3])
        let again = try await writer.queueSync { try writer.claimOnQueue([claim("c", self.record(username: "late", at: 6))]) }
        #expect(again[0] is AnswerAlreadyStored)
        #expect(try await rows(backend) == ["recorded", "first", "third"])
        await writer.close()
        try await backend.close()
    }

    @Test(
        """
        a decision batch commits without a flush of its own, and the connection flushes signatures again after it — written \
        or failed
        """
    )
    func decisionsLeaveSignaturesFlushed() async throws {
        let (backend, path) = try await database()
        // The decision log's tables, as the store's migrations make them.
        try await backend.write { database in
            for (version, statements) in StoreSchema.migrations where [9, 18, 19, 24].contains(version) {
                for statement in statements { try await database.run(statement) }
            }
        }
        let writer = SQLiteLogWriter(path: path)
        #expect(try await writer.write([record(at: 1)]).allSatisfy { $0 == nil })
        #expect(try await writer.queueSync { try writer.synchronousOnQueue() } == 2)  // FULL
        let decision = PolicyDecisionRecord(
            decidedAt: 2,
            channel: "api",
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "offer",
            customerHash: "abc",
            policyVersion: "v",
            granted: true,
            reasons: "[]",
            lookbackSeconds: 0,
            factsHash: "h",
            factsSnapshot: "{}"
        )
        try await writer.queueSync { try writer.writeDecisionsOnQueue([decision]) }
        #expect(try await writer.queueSync { try writer.synchronousOnQueue() } == 2)
        #expect(
            try await backend.read { try await $0.raw("SELECT count(*) AS n FROM policy_decisions").first(decodingColumn: "n", as: Int.self) } == 1
        )
        // A batch that fails (a table gone) rolls back and still leaves the connection flushing.
        try await backend.write { try await $0.run("DROP TABLE decision_daily") }
        await #expect(throws: (any Error).self) {
            try await writer.queueSync {
                try writer.writeDecisionsOnQueue(
                    [
                        PolicyDecisionRecord(
                            decidedAt: 3,
                            channel: "api",
                            bundleIdentifier: "com.example.app",
                            productIdentifier: "p",
                            offerIdentifier: "o",
                            customerHash: "abc",
                            policyVersion: "v",
                            granted: false,
                            reasons: "[]",
                            lookbackSeconds: 0,
                            factsHash: "h",
                            factsSnapshot: "{}"
                        )
                    ]
                )
            }
        }
        #expect(try await writer.queueSync { try writer.synchronousOnQueue() } == 2)
        #expect(try await writer.write([record(at: 4)]).allSatisfy { $0 == nil })
        await writer.close()
        try await backend.close()
    }
}

extension SQLiteLogWriter {
    /// Runs `body` on the writer's queue (as the group commit calls it) and returns its value.
    fileprivate func queueSync<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
