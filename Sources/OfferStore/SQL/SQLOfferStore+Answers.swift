import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    /// ``withCustomerTransaction(_:issuedSince:answerKey:_:)`` for a flow here for its answer key alone (its body
    /// reads no signatures): nothing it reads is changed by another request of the customer, so nothing is locked
    /// while it decides and signs. The facts and any answer already stored under the key are read first; the body
    /// runs outside any transaction; then one short transaction stores its answer under the key and records its
    /// signature (in the claim recorder's next batch, with other requests' claims: a SQLite file's log writer,
    /// PostgreSQL's one statement a batch) — unless the key was answered meanwhile (a retry racing the first request), when nothing is
    /// written and the body is shown that answer instead, whose value is returned. Facts the body returns (a grant
    /// spent) are written under the customer's lock in that transaction.
    func answerOnce<T: Sendable>(
        _ key: CustomerKey,
        answerKey: String,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        // The facts and the stored answer in one statement (one round trip).
        let (factsText, storedText): (String?, String?)
        if let prepared = backend.preparedAnswerStatements {
            (factsText, storedText) = try await backend.mappingErrors { try await prepared.factsAndAnswer(key, answerKey) }
        } else {
            (factsText, storedText) = try await backend.reading { database in
                let row = try await database.raw(Self.factsAndAnswer.bound([key.bundleIdentifier, key.applicationUsername, answerKey])).first()
                return (try row?.decode(column: "facts", as: String?.self), try row?.decode(column: "answer", as: String?.self))
            }
        }
        let facts = try factsText.map { try StoreCoding.decodeFacts($0) }
        let stored = storedText.flatMap { $0.isEmpty ? nil : $0 }
        // An answer another request stored: shown to the body once it is on disk, and nothing is written.
        func answered(_ stored: String) async throws -> T {
            try await waitUntilDurable()
            return try await body(CustomerSnapshot(facts: facts, issuedSignatures: [], storedAnswer: stored)).value
        }
        if let stored { return try await answered(stored) }
        let commit = try await body(CustomerSnapshot(facts: facts, issuedSignatures: []))
        if commit.facts == nil, let answer = commit.answer, let record = commit.record,
            let claimed = try await claimAlone(AnswerClaim(answerKey: answerKey, answer: answer, createdAt: Date().unixMilliseconds, record: record))
        {
            if claimed { return commit.value }
            let stored = try await backend.reading { database in try await Self.storedAnswer(answerKey, on: database) }
            return try await answered(stored ?? "")
        }
        let answeredMeanwhile: String? = try await backend.transaction { database in
            if let answer = commit.answer {
                // The claim and the answer in one row: a concurrent first use of the key waits here for this
                // transaction (PostgreSQL) or runs after it (SQLite's one writer), then reads this answer.
                let claimed =
                    try await database.insert(into: "stored_answers").columns("answer_key", "answer", "created_at")
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

    /// Stores a claim's answer and records its signature, both or neither, without a transaction of the caller's:
    /// in the claim recorder's next batch (one transaction with other requests' claims: a SQLite file's log writer,
    /// PostgreSQL's ``PostgresAnswers/ClaimBatch``). `false` when the key was answered meanwhile (nothing written);
    /// `nil` where there is no claim recorder (SQLite in memory: the caller's transaction does it).
    private func claimAlone(_ claim: AnswerClaim) async throws -> Bool? {
        guard let claimRecorder else { return nil }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                claimRecorder.submit(claim) { continuation.resume(with: $0) }
            }
            return true
        } catch is AnswerAlreadyStored {
            return false
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
