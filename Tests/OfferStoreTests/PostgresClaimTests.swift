import Foundation
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// PostgreSQL's batches of claims (``PostgresAnswers/claim(_:client:)``) on their own, on a real server: the same
/// outcomes as a SQLite file's log writer gives (``SQLiteLogWriterTests``).
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct PostgresClaimTests {
    let app = "com.example.claims-\(UUID().uuidString.prefix(8).lowercased())"
    let offer = "claimed-\(UUID().uuidString.prefix(8).lowercased())"

    private func record(username: String, at timestamp: Int64) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: app,
            productIdentifier: "com.example.monthly",
            offerIdentifier: offer,
            applicationUsername: username,
            timestamp: timestamp,
            format: "jws",
            channel: "retention",
            requestIdentifier: "request-\(username)"
        )
    }

    /// A claim made now (the purge test on the shared database removes answers stored before 1970-01-01T00:00:01).
    private func claim(_ key: String, _ record: IssuedSignature) -> AnswerClaim {
        AnswerClaim(answerKey: "\(app):\(key)", answer: "{\"\(key)\":1}", createdAt: Int64(Date().timeIntervalSince1970 * 1000), record: record)
    }

    @Test(
        """
        claims in one batch: a key answered before or twice writes nothing, a signature recorded before fails alone, the rest are stored and \
        counted once
        """
    )
    func claims() async throws {
        let (opened, _) = try await Backend.postgres.open()
        let store = try #require(opened as? SQLOfferStore)
        let statements = try #require(store.backend.preparedAnswerStatements)
        #expect(store.claimRecorder != nil)  // a retention answer's claim joins these batches
        let recorded = record(username: "recorded", at: 1_800_000_000_001)
        try await store.record(recorded)

        // A signature recorded before: the batch's statement is refused, and each claim is made alone, in order.
        let first = try await statements.claim([
            claim("a", record(username: "first", at: 1_800_000_000_002)),
            claim("a", record(username: "retry", at: 1_800_000_000_003)),  // the same key again, in the same batch
            claim("b", recorded),  // its signature was recorded before
            claim("c", record(username: "third", at: 1_800_000_000_004)),
        ])
        #expect(first[0] == nil && first[3] == nil)
        #expect(first[1] is AnswerAlreadyStored)
        #expect((first[2] as? OfferStoreError)?.code == .duplicateNonce)

        // The batch in one statement: a key answered in the batch before, a key twice, a new key.
        let second = try await statements.claim([
            claim("c", record(username: "late", at: 1_800_000_000_005)),
            claim("d", record(username: "fourth", at: 1_800_000_000_006)),
            claim("d", record(username: "fourth-retry", at: 1_800_000_000_007)),
            claim("e", record(username: "fifth", at: 1_800_000_000_008)),
        ])
        #expect(second[0] is AnswerAlreadyStored)
        #expect(second[1] == nil && second[3] == nil)
        #expect(second[2] is AnswerAlreadyStored)

        let (answers, usernames, counted) = try await store.backend.reading { database in
            let answers = try await database.raw("SELECT answer FROM stored_answers WHERE answer_key LIKE \(bind: app + ":%") ORDER BY answer_key")
                .all(decodingColumn: "answer", as: String.self)
            let usernames = try await database.raw(
                "SELECT application_username FROM issued_signatures WHERE bundle_identifier = \(bind: app) ORDER BY timestamp"
            )
            .all(decodingColumn: "application_username", as: String.self)
            let counted = try await database.raw("SELECT issued FROM issued_daily WHERE offer_identifier = \(bind: offer)")
                .all(decodingColumn: "issued", as: Int64.self).reduce(0, +)
            return (answers, usernames, counted)
        }
        #expect(answers == ["{\"a\":1}", "{\"c\":1}", "{\"d\":1}", "{\"e\":1}"])
        #expect(usernames == ["recorded", "first", "third", "fourth", "fifth"])
        #expect(counted == 5)
        try await store.close()
    }
}
