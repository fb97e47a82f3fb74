import Logging
import OfferModel
import PostgresNIO

/// The statements a real-time retention request runs on PostgreSQL, as prepared statements: their text never
/// changes, so postgres-nio prepares each once per connection and the server parses and plans it once, instead of
/// each request's statement being parsed, described and planned afresh (Apple's performance test sends 32 at a
/// time, all of them for one subscription). What they do is ``SQLOfferStore``'s, statement for statement:
/// ``SQLOfferStore/customers(withOriginalTransactionId:)``, the read of ``SQLOfferStore/answerOnce(_:answerKey:_:)``
/// and its claims, in batches.
enum PostgresAnswers {
    /// The backend's ``PreparedAnswerStatements`` over `client`.
    static func statements(_ client: PostgresConnections) -> PreparedAnswerStatements {
        PreparedAnswerStatements(
            customers: { originalTransactionId in
                var customers: [CustomerKey] = []
                for (bundle, username) in try await client.execute(Customers(originalTransactionId: originalTransactionId)) {
                    customers.append(CustomerKey(bundleIdentifier: bundle, applicationUsername: username))
                }
                return customers
            },
            factsAndAnswer: { key, answerKey in
                try await client.execute(FactsAndAnswer(key: key, answerKey: answerKey)).first ?? (nil, nil)
            },
            claim: { claims in try await claim(claims, client: client) },
            bindingRead: { originalTransactionId, candidate in
                var owners: [CustomerKey] = []
                var facts: String?
                for row in try await client.execute(BindingRead(originalTransactionId: originalTransactionId, candidate: candidate)) {
                    if let text = row.facts {
                        facts = text
                    } else if let bundle = row.bundle, let username = row.username {
                        owners.append(CustomerKey(bundleIdentifier: bundle, applicationUsername: username))
                    }
                }
                // In the order of their keys, as ``Customers`` reads them (the rows of a UNION come in no promised order).
                owners.sort { ($0.bundleIdentifier, $0.applicationUsername) < ($1.bundleIdentifier, $1.applicationUsername) }
                return (owners, facts)
            }
        )
    }

    /// Runs each of the path's statements once on `connection`, with nothing to read or write (a key no customer
    /// has, empty batches), so that the connection has them prepared — and its server process has read the tables'
    /// definitions and compiled schema 12's function — before the first request needs them.
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.execute(Customers(originalTransactionId: ""), logger: logger) {}
        for try await _ in try await connection.execute(
            BindingRead(originalTransactionId: "", candidate: CustomerKey(bundleIdentifier: "", applicationUsername: "")),
            logger: logger
        ) {}
        for try await _ in try await connection.execute(
            FactsAndAnswer(key: CustomerKey(bundleIdentifier: "", applicationUsername: ""), answerKey: ""),
            logger: logger
        ) {}
        for try await _ in try await connection.execute(ClaimBatch(claims: []), logger: logger) {}
        _ = try await connection.execute(RecordRetentionAnswers(answers: []), logger: logger)
    }

    /// Claims a batch's keys with their answers and records their signatures in one statement (``ClaimBatch``, one
    /// transaction, durable when it returns; `issued_daily` updated once for the batch): one outcome per claim, in
    /// ``IssuedSignatureWriter/claim``'s terms. A key claimed twice in the batch is claimed by its first claim, the
    /// others answered before. The keys are inserted in their order, so two replicas' batches that share keys wait
    /// for each other instead of deadlocking. Should a record's (timestamp, nonce) have been recorded before (the
    /// statement then writes nothing), each claim is made alone, in order, as a SQLite file's log writer does: only
    /// that one fails, and a later claim of its key may take it. Should the connection fail then, the claims made
    /// alone before are written and the rest are told their outcome is unknown.
    static func claim(_ claims: [AnswerClaim], client: PostgresConnections) async throws -> [(any Error)?] {
        var outcomes = [(any Error)?](repeating: nil, count: claims.count)
        var keys = Set<String>()
        var firsts: [Int] = []  // the positions of each key's first claim
        for (index, claim) in claims.enumerated() {
            if keys.insert(claim.answerKey).inserted { firsts.append(index) } else { outcomes[index] = AnswerAlreadyStored() }
        }
        do {
            var recorded = Set<SQLOfferStore.RecordIdentity>()
            for (timestamp, nonce) in try await client.execute(ClaimBatch(claims: firsts.map { claims[$0] })) {
                recorded.insert(SQLOfferStore.RecordIdentity(timestamp: timestamp, nonce: nonce))
            }
            for index in firsts where !recorded.contains(SQLOfferStore.RecordIdentity(claims[index].record)) {
                outcomes[index] = AnswerAlreadyStored()
            }
            return outcomes
        } catch let error as PSQLError where error.isUniqueViolation {
            for (index, claim) in claims.enumerated() {
                do {
                    let claimed = try await !client.execute(ClaimBatch(claims: [claim])).isEmpty
                    outcomes[index] = claimed ? nil : AnswerAlreadyStored()
                } catch let error as PSQLError where error.isUniqueViolation {
                    // The claim skips a key taken; only the record's (timestamp, nonce) can refuse the statement.
                    outcomes[index] = OfferStoreError.duplicateNonce(claim.record.nonce)
                } catch {
                    guard index > 0 else { throw error }  // nothing written: the batch fails whole
                    // The claims before it are written, each in its own transaction; this one's outcome is unknown.
                    let unknown = OfferStoreError(
                        .unavailable,
                        """
                        PostgreSQL store: the connection failed while recording; the answer may have been stored, and a retry of the request \
                        returns it.
                        """
                    )
                    for rest in index..<claims.count { outcomes[rest] = unknown }
                    return outcomes
                }
            }
            return outcomes
        }
    }

    /// The customers who hold an original transaction, in the order of their keys.
    struct Customers: PostgresPreparedStatement {
        static let name = "offer_signer_customers_of_transaction"
        static let sql = SQLOfferStore.customersOfTransaction.numbered
        static var bindingDataTypes: [PostgresDataType] { [.text] }
        var originalTransactionId: String
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(originalTransactionId)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (String, String) { try row.decode((String, String).self) }
    }

    /// A notification's binding reads: the holders of an original transaction (one row each, `facts` `NULL`) and a
    /// candidate's facts (one row, the keys `NULL`), in one round trip.
    struct BindingRead: PostgresPreparedStatement {
        static let name = "offer_signer_binding_read"
        static let sql = """
            SELECT bundle_identifier, application_username, NULL::text FROM customer_transactions WHERE original_transaction_id = $1 \
            UNION ALL SELECT NULL::text, NULL::text, facts FROM customers WHERE bundle_identifier = $2 AND application_username = $3
            """
        static var bindingDataTypes: [PostgresDataType] { [.text, .text, .text] }
        var originalTransactionId: String
        var candidate: CustomerKey
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(originalTransactionId)
            bindings.append(candidate.bundleIdentifier)
            bindings.append(candidate.applicationUsername)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (bundle: String?, username: String?, facts: String?) {
            let (bundle, username, facts) = try row.decode((String?, String?, String?).self)
            return (bundle, username, facts)
        }
    }

    /// A customer's facts and the answer stored under a key, in one row (each `NULL` when there is none).
    struct FactsAndAnswer: PostgresPreparedStatement {
        static let name = "offer_signer_facts_and_answer"
        static let sql = SQLOfferStore.factsAndAnswer.numbered
        static var bindingDataTypes: [PostgresDataType] { [.text, .text, .text] }
        var key: CustomerKey
        var answerKey: String
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(key.bundleIdentifier)
            bindings.append(key.applicationUsername)
            bindings.append(answerKey)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (String?, String?) { try row.decode((String?, String?).self) }
    }

    /// A batch of claims (each key once) as thirteen arrays: each key with its answer, stored unless the key was
    /// answered before, and the record of each claim that took inserted and counted in `issued_daily`, in one
    /// statement (its own transaction); the (timestamp, nonce) of each record inserted. A batch of one is also the
    /// fallback's claim made alone.
    struct ClaimBatch: PostgresPreparedStatement {
        static let name = "offer_signer_claim_batch"
        static let sql = """
            WITH claimed AS (INSERT INTO stored_answers (answer_key, answer, created_at) \
            SELECT * FROM unnest($1::text[], $2::text[], $3::int8[]) AS c(k, a, t) ORDER BY k \
            ON CONFLICT (answer_key) DO NOTHING RETURNING answer_key), \
            inserted AS (INSERT INTO issued_signatures (\(IssuedSignatureInsert.columns)) \
            SELECT r.n, r.k, r.b, r.p, r.o, r.u, r.t, r.f, r.c, r.q FROM unnest($1::text[], $4::text[], $5::text[], \
            $6::text[], $7::text[], $8::text[], $9::text[], $10::int8[], $11::text[], $12::text[], $13::text[]) \
            AS r(a, n, k, b, p, o, u, t, f, c, q) WHERE r.a IN (SELECT answer_key FROM claimed)
            """ + IssuedSignatureInsert.countingDailyTail
        static var bindingDataTypes: [PostgresDataType] { [.textArray, .textArray, .int8Array] + PostgresIssuedBatch.types }
        var claims: [AnswerClaim]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 13)
            bindings.append(claims.map(\.answerKey))
            bindings.append(claims.map(\.answer))
            bindings.append(claims.map(\.createdAt))
            PostgresIssuedBatch.appendColumns(of: claims.map(\.record), to: &bindings)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (Int64, String) { try row.decode((Int64, String).self) }
    }

    /// Records a batch of retention answers (``SQLOfferStore/writeRetentionAnswers(_:backend:logger:)``) in one
    /// round trip: a call of ``recordRetentionAnswersFunction``, its own transaction, durable when it returns.
    static func recordRetentionAnswers(_ answers: [RetentionAnswerRecord], client: PostgresConnections) async throws {
        _ = try await client.execute(RecordRetentionAnswers(answers: answers))
    }

    /// The function schema version 12 creates: the outcome lock of each subscription in the batch, in one order
    /// (the lock ``PostgresBackend/lockSubscriptionOutcomes(_:environment:on:)`` takes), then the answers inserted —
    /// an app's `requestIdentifier` recorded before skipped — each with its `saved_at`, the earliest renewal or
    /// auto-renew turned back on at or after it. The INSERT is a statement of a volatile function, so it reads the
    /// database as it is once the locks are held: it sees every event whose transaction held them before
    /// (``RetentionAnswerInsert`` is the same INSERT for the other stores).
    static let recordRetentionAnswersFunction = """
        CREATE OR REPLACE FUNCTION offer_signer_record_retention_answers(
            bundles TEXT[], requests TEXT[], environments TEXT[], originals TEXT[], products TEXT[], offered INTEGER[], answered BIGINT[])
        RETURNS VOID LANGUAGE plpgsql VOLATILE AS $$
        DECLARE subscription TEXT;
        BEGIN
            FOR subscription IN SELECT DISTINCT e || ':' || o FROM unnest(environments, originals) AS s(e, o) ORDER BY 1 LOOP
                PERFORM pg_advisory_xact_lock(72453652, hashtext(subscription));
            END LOOP;
            INSERT INTO retention_answers (bundle_identifier, request_identifier, environment, original_transaction_id,
                product_identifier, offered, answered_at, saved_at)
            SELECT a.b, a.r, a.e, a.o, a.p, a.f, a.t, \(RetentionAnswerInsert.savedAt.filled(["a.o", "a.e", "a.t"]))
            FROM unnest(bundles, requests, environments, originals, products, offered, answered) AS a(b, r, e, o, p, f, t)
            ON CONFLICT (bundle_identifier, request_identifier) DO NOTHING;
        END $$
        """

    /// A call of ``recordRetentionAnswersFunction`` with the batch as seven arrays.
    struct RecordRetentionAnswers: PostgresPreparedStatement {
        static let name = "offer_signer_record_retention_answers"
        static let sql = "SELECT offer_signer_record_retention_answers($1, $2, $3, $4, $5, $6, $7)"
        static var bindingDataTypes: [PostgresDataType] {
            [.textArray, .textArray, .textArray, .textArray, .textArray, .int4Array, .int8Array]
        }
        var answers: [RetentionAnswerRecord]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 7)
            bindings.append(answers.map(\.bundleIdentifier))
            bindings.append(answers.map(\.requestIdentifier))
            bindings.append(answers.map(\.environment))
            bindings.append(answers.map(\.originalTransactionId))
            bindings.append(answers.map(\.productIdentifier))
            bindings.append(answers.map { Int32($0.offered ? 1 : 0) })
            bindings.append(answers.map(\.answeredAt))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws {}
    }
}
