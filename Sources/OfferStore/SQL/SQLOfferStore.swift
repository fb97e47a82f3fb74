import Foundation
import Logging
import OfferModel
import SQLKit

/// The store, written once with SQLKit's query builder over either database: the embedded SQLite file (the
/// default) or PostgreSQL shared by replicas. The group commit's insert, the hot path, is the one exception: a
/// SQLite file's batches go through ``SQLiteLogWriter`` (prepared statements on a connection of its own),
/// PostgreSQL's through ``PostgresIssuedBatch`` (one prepared statement, the batch bound as arrays), the others
/// through one hand-written ``IssuedSignatureInsert``. The ``SQLStoreBackend`` supplies connections and the
/// few things that really differ (PRAGMAs, how a write transaction begins, the migration lock).
///
/// ## Durability and group commit
///
/// A transaction is durable when COMMIT returns (SQLite: WAL with `synchronous=FULL`; PostgreSQL:
/// `synchronous_commit = on`). `record(_:)` does not pay one flush per signature: callers queue their records,
/// one writer takes everything queued, writes it in one transaction and commits once, then resumes every waiting
/// caller; a record written before fails only its own caller. A record is identified by its (timestamp, nonce)
/// pair, what its signature covers (schema version 6: an index that grows at its right edge, not one random page
/// a record). A SQLite file's batch: ``SQLiteLogWriter``, on whose queue the writer runs (no task). PostgreSQL's:
/// ``PostgresIssuedBatch``. Otherwise one multi-row `INSERT`; should a unique index
/// refuse it (the statement writes nothing), the batch is inserted again with `ON CONFLICT (timestamp, nonce) DO
/// NOTHING RETURNING timestamp, nonce`, and a record not returned fails alone.
///
/// ## One customer at a time
///
/// ``updateCustomer(_:claiming:_:)``, ``applyNotification(notificationUUID:to:claiming:_:)`` and
/// ``withCustomerTransaction(_:issuedSince:_:)`` lock the customer's row (inserting a placeholder row for a
/// customer the store has not heard of) with `SELECT … FOR UPDATE` inside their transaction, so they are
/// serialized per customer across every process sharing a PostgreSQL database. SQLite renders no `FOR UPDATE`:
/// there every write transaction is `BEGIN IMMEDIATE` on the one writer connection, which serializes them all.
final class SQLOfferStore: OfferStore {
    let backend: any SQLStoreBackend
    let recorder: GroupCommitQueue<IssuedSignature>
    /// The group commit of decided records checked against what their decision read (``record(_:decidedOver:)``),
    /// where replicas decide for the same customers (PostgreSQL); `nil` where this process decides alone.
    let checkedRecorder: GroupCommitQueue<CheckedRecord>?
    /// The decision log's batched writer (``logDecision(_:)``): off the answer's path, one transaction a batch, a
    /// failed batch retried and what waits bounded (``decisionLogRetry(logger:delays:maximumQueued:)``).
    let decisionRecorder: GroupCommitQueue<PolicyDecisionRecord>
    /// The batched writer of idempotent answers' claims with their signatures (``answerOnce``): a SQLite file's on
    /// the log writer's queue, PostgreSQL's one prepared statement a batch; `nil` in memory (the claim is then
    /// made in a transaction of its own).
    let claimRecorder: GroupCommitQueue<AnswerClaim>?
    /// The retention answers' batched writer (``recordRetentionAnswer(_:)``): its callers wait for their batch.
    let retentionAnswerRecorder: GroupCommitQueue<RetentionAnswerRecord>
    /// App Store notifications' batched writer (``fileNotification(_:)``): its callers wait for their batch's commit.
    let notificationRecorder: GroupCommitQueue<PendingFiling>
    /// PostgreSQL's LISTEN/NOTIFY of document changes (``documentChanges()``); `nil` on a SQLite file, which one
    /// process serves.
    let documentFeed: PostgresDocumentFeed?
    /// One decision at a time per customer, in this process (``customerLocks``: only where no other process decides).
    let processCustomerLocks = CustomerLocks()
    var sharedLimits: (any SharedLimitStore)? { backend.sharedLimits }

    init(backend: any SQLStoreBackend, logger: Logger, documentFeed: PostgresDocumentFeed? = nil) {
        self.backend = backend
        self.documentFeed = documentFeed
        decisionRecorder = GroupCommitQueue(maximumBatch: 500, retry: Self.decisionLogRetry(logger: logger), gather: Self.decisionGather) { records in
            try await Self.writeDecisions(records, backend: backend)
        }
        retentionAnswerRecorder = GroupCommitQueue(maximumBatch: 500) { answers in
            try await Self.writeRetentionAnswers(answers, backend: backend, logger: logger)
        }
        notificationRecorder = GroupCommitQueue(maximumBatch: Self.notificationsPerBatch) { batch in
            try await Self.fileNotifications(batch, backend: backend)
        }
        checkedRecorder = backend.checkedBatchRun.map { batchRun in
            GroupCommitQueue(maximumBatch: backend.recordsPerBatch, executor: backend.batchExecutor) { batches in
                await batchRun { insert in
                    await batches { checked in try await Self.recordCheckedBatch(checked, insert: insert, backend: backend, logger: logger) }
                }
            }
        }
        if let writer = backend.issuedSignatureWriter {
            claimRecorder = GroupCommitQueue(maximumBatch: backend.recordsPerBatch, queue: writer.queue) { claims in
                try Self.loggingFailure(ofBatchOf: claims.count, logger: logger) { try writer.claim(claims) }
            }
            recorder = GroupCommitQueue(maximumBatch: backend.recordsPerBatch, queue: writer.queue) { records in
                try Self.loggingFailure(ofBatchOf: records.count, logger: logger) { try writer.write(records) }
            }
        } else {
            claimRecorder = backend.preparedAnswerStatements.map { prepared in
                GroupCommitQueue(maximumBatch: backend.recordsPerBatch) { claims in
                    try await Self.loggingFailure(ofBatchOf: claims.count, logger: logger) {
                        try await backend.mappingErrors { try await prepared.claim(claims) }
                    }
                }
            }
            if let batchRun = backend.issuedSignatureBatchRun {
                recorder = GroupCommitQueue(maximumBatch: backend.recordsPerBatch, executor: backend.batchExecutor) { batches in
                    await batchRun { insert in
                        await batches { records in try await Self.recordBatch(records, batchInsert: insert, backend: backend, logger: logger) }
                    }
                }
            } else {
                recorder = GroupCommitQueue(maximumBatch: backend.recordsPerBatch) { records in
                    try await Self.recordBatch(records, backend: backend, logger: logger)
                }
            }
        }
    }

    func migrate() async throws {
        try await StoreSchema.migrate(backend)
    }

    // MARK: customers

    func customerFacts(for key: CustomerKey) async throws -> CustomerFacts? {
        if let read = backend.customerSnapshotRead {
            // PostgreSQL: the decisions' prepared read, with no signatures (none is dated at or after `Int64.max`),
            // instead of a statement SQLKit builds and the server parses each time (a notification's binding reads it).
            let text = try await backend.mappingErrors { try await read(key, Int64.max) }.facts
            return try text.map { try StoreCoding.decodeFacts($0) }
        }
        if let readers = (backend as? SQLiteBackend)?.customerReaders {
            // A SQLite file: the decisions' prepared read, with no signatures, on a reader's own connection.
            return try await readers.snapshot(key, issuedSince: Int64.max).facts.map { try StoreCoding.decodeFacts($0) }
        }
        let text = try await backend.reading { database in
            try await database.select().column("facts").from("customers").where(customer: key)
                .first(decodingColumn: "facts", as: String.self)
        }
        return try text.map { try StoreCoding.decodeFacts($0) }
    }

    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        if let prepared = backend.preparedAnswerStatements {
            return try await backend.mappingErrors { try await prepared.customers(originalTransactionId) }
        }
        if let readers = (backend as? SQLiteBackend)?.customerReaders {
            return try await readers.customers(withOriginalTransactionId: originalTransactionId)
        }
        return try await backend.reading { database in
            try await database.raw(Self.customersOfTransaction.bound([originalTransactionId]))
                .all(decoding: CustomerKey.self, keyDecodingStrategy: .convertFromSnakeCase)
        }
    }

    /// On PostgreSQL one prepared statement; on a SQLite file both reads on one reader's connection, in one trip to
    /// its queue; otherwise the two reads.
    func bindingRead(originalTransactionId: String?, candidate: CustomerKey?) async throws -> (owners: [CustomerKey], candidateFacts: CustomerFacts?)
    {
        guard let originalTransactionId, let candidate else {
            return try await bindingReadOneByOne(originalTransactionId: originalTransactionId, candidate: candidate)
        }
        let read: (owners: [CustomerKey], facts: String?)
        if let prepared = backend.preparedAnswerStatements {
            read = try await backend.mappingErrors { try await prepared.bindingRead(originalTransactionId, candidate) }
        } else if let readers = (backend as? SQLiteBackend)?.customerReaders {
            read = try await readers.bindingRead(originalTransactionId: originalTransactionId, candidate: candidate)
        } else {
            return try await bindingReadOneByOne(originalTransactionId: originalTransactionId, candidate: candidate)
        }
        return (read.owners, try read.facts.map { try StoreCoding.decodeFacts($0) })
    }

    @discardableResult
    func updateCustomer(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts {
        try await inCustomerTransaction { database in
            try await Self.update(key, claiming: claims, on: database, body)
        }
    }

    func applyNotification(
        notificationUUID: String,
        to key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> Bool {
        try await inCustomerTransaction { database in
            guard try await Self.markProcessed(notificationUUID, on: database) else { return false }
            _ = try await Self.update(key, claiming: claims, on: database, body)
            return true
        }
    }

    func transactionOwner(bundleIdentifier: String, environment: String, originalTransactionId: String) async throws -> CustomerKey? {
        try await backend.reading { database in
            try await Self.owner(
                bundleIdentifier: bundleIdentifier,
                environment: environment,
                originalTransactionId: originalTransactionId,
                on: database
            )
        }
    }

    private static func owner(
        bundleIdentifier: String,
        environment: String,
        originalTransactionId: String,
        on database: any SQLDatabase
    ) async throws -> CustomerKey? {
        try await database.select().column("application_username").from("transaction_owners")
            .where("bundle_identifier", .equal, bundleIdentifier).where("environment", .equal, environment)
            .where("original_transaction_id", .equal, originalTransactionId)
            .first(decodingColumn: "application_username", as: String.self)
            .map { CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: $0) }
    }

    /// Claims each original transaction for `key` inside the write's transaction (``TransactionClaim``), in one
    /// order (so two writes claiming the same two never wait for each other crosswise). The insert does nothing
    /// when the row exists; on PostgreSQL it first waits for a concurrent claim of the same row to commit or roll
    /// back, so the read after it sees the winner. SQLite's writes are serialized by its one writer.
    static func claim(_ claims: [TransactionClaim], for key: CustomerKey, on database: any SQLDatabase) async throws {
        for claim in Set(claims).sorted(by: { ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId) }) {
            let claimed =
                try await database.insert(into: "transaction_owners")
                .columns("bundle_identifier", "environment", "original_transaction_id", "application_username", "claimed_at")
                .values(
                    SQLBind(key.bundleIdentifier),
                    SQLBind(claim.environment),
                    SQLBind(claim.originalTransactionId),
                    SQLBind(key.applicationUsername),
                    SQLBind(Date().unixMilliseconds)
                )
                .ignoringConflicts(with: ["bundle_identifier", "environment", "original_transaction_id"])
                .returning("application_username").first() != nil
            if claimed { continue }
            let owner = try await owner(
                bundleIdentifier: key.bundleIdentifier,
                environment: claim.environment,
                originalTransactionId: claim.originalTransactionId,
                on: database
            )
            if owner == key { continue }
            if let replacing = claim.replacing, owner?.applicationUsername == replacing {
                let moved =
                    try await database.update("transaction_owners")
                    .set("application_username", to: key.applicationUsername).set("claimed_at", to: Date().unixMilliseconds)
                    .where("bundle_identifier", .equal, key.bundleIdentifier).where("environment", .equal, claim.environment)
                    .where("original_transaction_id", .equal, claim.originalTransactionId)
                    .where("application_username", .equal, replacing)
                    .returning("application_username").first() != nil
                if moved { continue }
            }
            throw CallerError(
                error: OfferStoreError(
                    .transactionClaimed,
                    "This subscription's original transaction is already claimed by another customer of this app; nothing was written."
                )
            )
        }
    }

    func markNotificationProcessed(notificationUUID: String) async throws -> Bool {
        try await inCustomerTransaction { database in try await Self.markProcessed(notificationUUID, on: database) }
    }

    func purgeExpired(storedAnswersBefore: Date, processedNotificationsBefore: Date) async throws -> (storedAnswers: Int, processedNotifications: Int)
    {
        try await inCustomerTransaction { database in
            let answers = try await database.delete(from: "stored_answers")
                .where("created_at", .lessThan, SQLBind(storedAnswersBefore.unixMilliseconds)).returning("answer_key").all().count
            let notifications = try await database.delete(from: "processed_notifications")
                .where("processed_at", .lessThan, SQLBind(processedNotificationsBefore.unixMilliseconds)).returning("notification_uuid").all().count
            return (answers, notifications)
        }
    }

    func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        answerKey: String?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        // Here for its answer key alone (`Int64.max` with a key: the body reads no signatures): no customer lock.
        if since == Int64.max, let answerKey { return try await answerOnce(key, answerKey: answerKey, body) }
        return try await inCustomerTransaction { database in
            let locked = try await Self.lockCustomer(key, on: database)
            // Checked batches of other replicas record this customer's signatures under this lock, not the row's.
            try await backend.lockIssued(key, on: database)
            var storedAnswer: String?
            var claimed = false
            if let answerKey {
                // Claim the key (an empty answer) before deciding: a concurrent first use of the same key under
                // another customer's lock, or on another replica, waits here until this transaction ends, then
                // reads its answer. Always after the customer's lock, so locks are taken in one order.
                claimed =
                    try await database.insert(into: "stored_answers").columns("answer_key", "answer", "created_at")
                    .values(SQLBind(answerKey), SQLBind(""), SQLBind(Date().unixMilliseconds))
                    .ignoringConflicts(with: "answer_key").returning("answer_key").first() != nil
                if !claimed {
                    storedAnswer = try await database.select().column("answer").from("stored_answers")
                        .where("answer_key", .equal, answerKey).first(decodingColumn: "answer", as: String.self)
                        .flatMap { $0.isEmpty ? nil : $0 }
                }
            }
            // A stored answer is returned as it is: nothing the body decides is written.
            let issued =
                storedAnswer != nil || since == Int64.max
                ? []
                : try await Self.selectSignatures(
                    IssuedSignatureQuery(bundleIdentifier: key.bundleIdentifier, applicationUsername: key.applicationUsername, since: since),
                    limit: nil,
                    on: database
                )
            let commit: CustomerCommit<T>
            do {
                commit = try await body(CustomerSnapshot(facts: locked.facts, issuedSignatures: issued, storedAnswer: storedAnswer))
            } catch {
                throw CallerError(error: error)
            }
            if storedAnswer == nil, var facts = commit.facts {
                try await Self.write(&facts, of: key, on: database)
            } else if locked.placeholder {
                try await database.delete(from: "customers").where(customer: key).run()
            }
            guard storedAnswer == nil else { return commit.value }
            if let record = commit.record, let answerKey, let answer = commit.answer, backend.writesInCommonTableExpressions {
                // The record, its count in `issued_daily` and the answer in one statement: one round trip under the
                // customer's lock, not three.
                let answered: SQLQueryString = """
                    answered AS (UPDATE stored_answers SET answer = \(bind: answer), created_at = \(bind: Date().unixMilliseconds) \
                    WHERE answer_key = \(bind: answerKey))
                    """
                let inserted = try await database.raw(
                    "\(IssuedSignatureInsert(records: [record], ignoringDuplicates: true, countingDaily: true, preceding: answered))"
                ).all()
                if inserted.isEmpty { throw OfferStoreError.duplicateNonce(record.nonce) }
                return commit.value
            }
            if let record = commit.record { try await Self.record(record, on: database) }
            if let answerKey {
                if let answer = commit.answer {
                    try await database.update("stored_answers").set("answer", to: answer).set("created_at", to: Date().unixMilliseconds)
                        .where("answer_key", .equal, answerKey).run()
                } else if claimed {
                    try await database.delete(from: "stored_answers").where("answer_key", .equal, answerKey).run()
                }
            }
            return commit.value
        }
    }

    /// A write transaction whose callers' errors come out unchanged.
    private func inCustomerTransaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        do {
            return try await backend.transaction(flushAfterCommit: true, body)
        } catch let error as CallerError {
            throw error.error
        }
    }

    /// Locks the customer for the rest of the transaction and reads their facts (`nil`: the store has not heard
    /// of them). Such a customer gets a placeholder row with empty facts, the row that is locked; it is overwritten
    /// by the facts written, or deleted again.
    static func lockCustomer(_ key: CustomerKey, on database: any SQLDatabase) async throws -> (facts: CustomerFacts?, placeholder: Bool) {
        let placeholder =
            try await database.insert(into: "customers")
            .columns("bundle_identifier", "application_username", "facts", "updated_at")
            .values(
                SQLBind(key.bundleIdentifier),
                SQLBind(key.applicationUsername),
                SQLBind(try StoreCoding.encode(CustomerFacts(key: key))),
                SQLBind(Date().unixMilliseconds)
            )
            .ignoringConflicts(with: ["bundle_identifier", "application_username"])
            .returning("bundle_identifier").first() != nil
        let text = try await database.select().column("facts").from("customers").where(customer: key).for(.update)
            .first(decodingColumn: "facts", as: String.self)
        guard let text, !placeholder else { return (nil, placeholder) }
        return (try StoreCoding.decodeFacts(text), false)
    }

    /// Read-modify-write of a customer's facts inside a transaction; a customer not heard of starts empty.
    static func update(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim] = [],
        on database: any SQLDatabase,
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts {
        var facts = try await lockCustomer(key, on: database).facts ?? CustomerFacts(key: key)
        do {
            try body(&facts)
        } catch {
            throw CallerError(error: error)
        }
        // After the customer's lock and the body: locks are taken in one order (customer, then transactions), and a
        // body that refuses claims nothing.
        try await claim(claims, for: key, on: database)
        try await write(&facts, of: key, on: database)
        return facts
    }

    /// Writes facts over the customer's (locked) row, and indexes their original transaction identifiers.
    static func write(_ facts: inout CustomerFacts, of key: CustomerKey, on database: any SQLDatabase) async throws {
        facts.key = key
        facts.updatedAt = Date()
        try await database.update("customers")
            .set("facts", to: try StoreCoding.encode(facts)).set("updated_at", to: facts.updatedAt.unixMilliseconds)
            .where(customer: key).run()
        let originals = Set(facts.subscriptions.compactMap(\.originalTransactionId)).sorted()
        guard !originals.isEmpty else { return }
        try await database.insert(into: "customer_transactions")
            .columns("original_transaction_id", "bundle_identifier", "application_username")
            .rows(
                originals.map { original -> [any SQLExpression] in
                    [SQLBind(original), SQLBind(key.bundleIdentifier), SQLBind(key.applicationUsername)]
                }
            )
            .ignoringConflicts().run()
    }
}
