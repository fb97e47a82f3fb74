import Logging
import OfferModel
import SQLKit

extension SQLOfferStore: CustomerLockingStore {
    /// The lock per customer: where this process is the only one deciding for the store's customers (a SQLite file a
    /// server holds, ``SQLiteFileLock``, or a database in memory), and on PostgreSQL, whose batches check each
    /// decided record against its read (``checkedRecorder``). A file the tools opened beside a server: `nil`.
    var customerLocks: CustomerLocks? {
        if let sqlite = backend as? SQLiteBackend { return sqlite.decidesAlone ? processCustomerLocks : nil }
        return checkedRecorder == nil ? nil : processCustomerLocks
    }

    /// The facts and the signatures: on a SQLite file, two statements prepared once per connection
    /// (``SQLiteCustomerReaders``); on PostgreSQL one prepared statement (``PostgresCustomerDecisions``); otherwise
    /// two statements on one read connection.
    func customerSnapshot(_ key: CustomerKey, issuedSince since: Int64) async throws -> CustomerLockSnapshot {
        if let readers = (backend as? SQLiteBackend)?.customerReaders {
            let (text, issued) = try await readers.snapshot(key, issuedSince: since)
            return try Self.snapshot(text, issued)
        }
        if let read = backend.customerSnapshotRead {
            let (text, issued) = try await backend.mappingErrors { try await read(key, since) }
            return try Self.snapshot(text, issued)
        }
        let (text, issued) = try await backend.reading { database in
            let text = try await database.select().column("facts").from("customers").where(customer: key)
                .first(decodingColumn: "facts", as: String.self)
            let query = IssuedSignatureQuery(bundleIdentifier: key.bundleIdentifier, applicationUsername: key.applicationUsername, since: since)
            return (text, try await Self.selectSignatures(query, limit: nil, on: database))
        }
        return try Self.snapshot(text, issued)
    }

    /// A snapshot of the stored facts' text (decoded) and the signatures read.
    private static func snapshot(_ text: String?, _ issued: [IssuedSignature]) throws -> CustomerLockSnapshot {
        CustomerLockSnapshot(facts: try text.map { try StoreCoding.decodeFacts($0) }, storedFacts: text, issued: issued)
    }

    /// On a SQLite file, when one of its readers is free (``SQLiteCustomerReaders/snapshotIfFree(_:issuedSince:)``);
    /// elsewhere `nil`: PostgreSQL answers across the network.
    func customerSnapshotAtOnce(_ key: CustomerKey, issuedSince since: Int64) -> Result<CustomerLockSnapshot, any Error>? {
        guard let readers = (backend as? SQLiteBackend)?.customerReaders, let read = readers.snapshotIfFree(key, issuedSince: since)
        else { return nil }
        return Result {
            let (text, issued) = try read.get()
            return try Self.snapshot(text, issued)
        }
    }

    /// Through ``checkedRecorder`` where replicas decide (its batch checks `read`); otherwise the group commit.
    func record(_ record: IssuedSignature, decidedOver read: IssuedRead) async throws -> Bool {
        guard let checkedRecorder else {
            try await self.record(record)
            return true
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
            checkedRecorder.submit(CheckedRecord(record: record, read: read)) { result in
                switch result {
                case .success: continuation.resume(returning: true)
                case .failure(is IssuedSignaturesChanged): continuation.resume(returning: false)
                case .failure(let error): continuation.resume(throwing: error)
                }
            }
        }
    }

    /// A backend's insert of one batch of checked records (``SQLStoreBackend/checkedBatchRun``): the records inserted.
    typealias CheckedBatchInsert = @Sendable ([CheckedRecord]) async throws -> Set<RecordIdentity>

    /// Writes one batch of checked records; each record's outcome (`nil`: written; ``IssuedSignaturesChanged``: its
    /// check refused it, or its nonce was recorded before — either way its decision is made again).
    static func recordCheckedBatch(
        _ checked: [CheckedRecord],
        insert: CheckedBatchInsert,
        backend: any SQLStoreBackend,
        logger: Logger
    ) async throws -> [(any Error)?] {
        try await loggingFailure(ofBatchOf: checked.count, logger: logger) {
            let inserted = try await backend.mappingErrors { try await insert(checked) }
            return checked.map { inserted.contains(RecordIdentity($0.record)) ? nil : IssuedSignaturesChanged() }
        }
    }
}

/// A decided record and what its decision read of the customer's signatures (``SQLOfferStore/checkedRecorder``).
struct CheckedRecord: Sendable {
    var record: IssuedSignature
    var read: IssuedRead
}

/// A checked record was not written: the customer's signatures changed since its decision's read.
struct IssuedSignaturesChanged: Error {}
