import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    /// ``withCustomerTransaction(_:issuedSince:answerKey:_:)`` for a flow here for its answer key alone (its body
    /// reads no signatures): nothing it reads is changed by another request of the customer, so nothing is locked
    /// while it decides and signs. The facts and any answer already stored under the key are read first; the body
    /// runs outside any transaction; then one short transaction stores its answer under the key and records its
    /// signature (a SQLite file: in the log writer's next batch, with other requests' claims; PostgreSQL: one
    /// statement) — unless the key was answered meanwhile (a retry racing the first request), when nothing is
    /// written and the body is shown that answer instead, whose value is returned. Facts the body returns (a grant
    /// spent) are written under the customer's lock in that transaction.
    func answerOnce<T: Sendable>(
        _ key: CustomerKey, answerKey: String, _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        // The facts and the stored answer in one statement (one round trip).
        let (facts, stored) = try await backend.reading { database in
            let row = try await database.raw("""
                SELECT (SELECT facts FROM customers WHERE bundle_identifier = \(bind: key.bundleIdentifier) \
                AND application_username = \(bind: key.applicationUsername)) AS facts, \
                (SELECT answer FROM stored_answers WHERE answer_key = \(bind: answerKey)) AS answer
                """).first()
            let facts = try row?.decode(column: "facts", as: String?.self).map { try StoreCoding.decode(CustomerFacts.self, from: $0) }
            return (facts, try row?.decode(column: "answer", as: String?.self).flatMap { $0.isEmpty ? nil : $0 })
        }
        // An answer another request stored: shown to the body once it is on disk, and nothing is written.
        func answered(_ stored: String) async throws -> T {
            try await waitUntilDurable()
            return try await body(CustomerSnapshot(facts: facts, issuedSignatures: [], storedAnswer: stored)).value
        }
        if let stored { return try await answered(stored) }
        let commit = try await body(CustomerSnapshot(facts: facts, issuedSignatures: []))
        if claimRecorder != nil || backend.writesInCommonTableExpressions, commit.facts == nil, let answer = commit.answer, let record = commit.record {
            let claimed: Bool
            if let claimRecorder {
                // A SQLite file: the claim joins the log writer's next batch (one transaction, prepared statements).
                let claim = AnswerClaim(answerKey: answerKey, answer: answer, createdAt: Date().unixMilliseconds, record: record)
                do {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        claimRecorder.submit(claim) { continuation.resume(with: $0) }
                    }
                    claimed = true
                } catch is AnswerAlreadyStored {
                    claimed = false
                }
            } else {
                claimed = try await claimAndRecord(answerKey: answerKey, answer: answer, record: record)
            }
            if claimed { return commit.value }
            let stored = try await backend.reading { database in try await Self.storedAnswer(answerKey, on: database) }
            return try await answered(stored ?? "")
        }
        let answeredMeanwhile: String? = try await backend.transaction { database in
            if let answer = commit.answer {
                // The claim and the answer in one row: a concurrent first use of the key waits here for this
                // transaction (PostgreSQL) or runs after it (SQLite's one writer), then reads this answer.
                let claimed = try await database.insert(into: "stored_answers").columns("answer_key", "answer", "created_at")
                    .values(SQLBind(answerKey), SQLBind(answer), SQLBind(Date().unixMilliseconds))
                    .ignoringConflicts(with: "answer_key").returning("answer_key").first() != nil
                if !claimed { return try await Self.storedAnswer(answerKey, on: database) ?? "" }
            }
            if var facts = commit.facts {
                _ = try await Self.lockCustomer(key, on: database)
                try await Self.write(&facts, of: key, on: database)
            }
            if let record = commit.record { try await Self.record(record, on: database) }
            return nil
        }
        guard let answeredMeanwhile else { return commit.value }
        return try await answered(answeredMeanwhile)
    }

    /// PostgreSQL: the claim with its answer, the signature's record and its count in `issued_daily` in one statement, its own transaction (one
    /// round trip): `false` when the key was answered meanwhile, and nothing was written.
    private func claimAndRecord(answerKey: String, answer: String, record: IssuedSignature) async throws -> Bool {
        try await backend.mappingErrors {
            try await backend.write { database in
                do {
                    return try await !database.raw("""
                        WITH claimed AS (INSERT INTO stored_answers (answer_key, answer, created_at) \
                        VALUES (\(bind: answerKey), \(bind: answer), \(bind: Date().unixMilliseconds)) \
                        ON CONFLICT (answer_key) DO NOTHING RETURNING answer_key), \
                        inserted AS (INSERT INTO issued_signatures (\(unsafeRaw: IssuedSignatureInsert.columns)) \
                        SELECT \(bind: record.nonce), \(bind: record.keyIdentifier), \(bind: record.bundleIdentifier), \
                        \(bind: record.productIdentifier), \(bind: record.offerIdentifier), \(bind: record.applicationUsername), \
                        \(bind: record.timestamp), \(bind: record.format), \(bind: record.channel), \(bind: record.requestIdentifier) \
                        WHERE EXISTS (SELECT 1 FROM claimed)\(unsafeRaw: IssuedSignatureInsert.countingDailyTail)
                        """).all().isEmpty
                } catch where backend.isUniqueViolation(error) {
                    // The claim skips a key taken; only the record's (timestamp, nonce) can refuse the statement.
                    throw OfferStoreError.duplicateNonce(record.nonce)
                }
            }
        }
    }

    /// Returns once every commit before the call is on disk: an answer another request stored may have been read
    /// before its flush (commits release their locks first), and is never returned before it is durable.
    private func waitUntilDurable() async throws {
        try await backend.transaction(flushAfterCommit: true) { _ in }
    }

    /// The answer stored under `answerKey`; `nil` when there is none (or only the claim of a transaction that has
    /// not stored its answer yet).
    private static func storedAnswer(_ answerKey: String, on database: any SQLDatabase) async throws -> String? {
        try await database.select().column("answer").from("stored_answers").where("answer_key", .equal, answerKey)
            .first(decodingColumn: "answer", as: String.self).flatMap { $0.isEmpty ? nil : $0 }
    }
}
