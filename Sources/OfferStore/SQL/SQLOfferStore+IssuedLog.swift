import Foundation
import Logging
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: issued signatures (group commit)

    func record(_ signature: IssuedSignature, startWhenReady: StartWhenReady?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        recorder.submit(signature, startWhenReady: startWhenReady, completion: completion)
    }

    /// A backend's own insert of one group-commit batch (``SQLStoreBackend/issuedSignatureBatchRun``): the records
    /// inserted, each once.
    typealias BatchInsert = @Sendable ([IssuedSignature]) async throws -> Set<RecordIdentity>

    /// Writes one group-commit batch in one transaction, with `batchInsert` when the backend has its own; each
    /// record's outcome (`nil`: written).
    static func recordBatch(
        _ records: [IssuedSignature],
        batchInsert: BatchInsert? = nil,
        backend: any SQLStoreBackend,
        logger: Logger
    ) async throws -> [(any Error)?] {
        try await loggingFailure(ofBatchOf: records.count, logger: logger) {
            var inserted: Set<RecordIdentity>
            if let batchInsert {
                inserted = try await backend.mappingErrors { try await batchInsert(records) }
            } else {
                // The batch's issued_daily counts (IssuedRollup): in the same statement where the batch is one, else
                // one more statement in its transaction.
                let countingDaily = !backend.batchInTransaction
                let insert: @Sendable (any SQLDatabase) async throws -> Set<RecordIdentity> = { database in
                    let inserted: Set<RecordIdentity>
                    do {
                        try await database.raw("\(IssuedSignatureInsert(records: records, ignoringDuplicates: false, countingDaily: countingDaily))")
                            .run()
                        inserted = Set(records.map(RecordIdentity.init))
                    } catch  where backend.isUniqueViolation(error) {
                        inserted = try await Self.insert(records, countingDaily: countingDaily, on: database)
                    }
                    if !countingDaily { try await IssuedRollup.add(records.filter { inserted.contains(RecordIdentity($0)) }, on: database) }
                    return inserted
                }
                inserted =
                    backend.batchInTransaction
                    ? try await backend.transaction(insert)
                    : try await backend.mappingErrors { try await backend.write(insert) }
            }
            return records.map { inserted.remove(RecordIdentity($0)) != nil ? nil : OfferStoreError.duplicateNonce($0.nonce) }
        }
    }

    /// Runs one group-commit batch's write (of `count` records); when it fails, logs that the batch was not recorded
    /// and rethrows.
    static func loggingFailure<T>(ofBatchOf count: Int, logger: Logger, _ write: () throws -> T) rethrows -> T {
        do {
            return try write()
        } catch {
            logBatchFailure(count: count, error, logger: logger)
            throw error
        }
    }

    /// ``loggingFailure(ofBatchOf:logger:_:)`` for a write that suspends.
    static func loggingFailure<T>(ofBatchOf count: Int, logger: Logger, _ write: () async throws -> T) async rethrows -> T {
        do {
            return try await write()
        } catch {
            logBatchFailure(count: count, error, logger: logger)
            throw error
        }
    }

    private static func logBatchFailure(count: Int, _ error: any Error, logger: Logger) {
        logger.error("issued-signature batch not recorded", metadata: ["count": "\(count)", "error": "\(error)"])
    }

    /// Writes one signature's record and its count in `issued_daily`, inside the caller's transaction; a nonce
    /// recorded before refuses it.
    static func record(_ record: IssuedSignature, on database: any SQLDatabase) async throws {
        if try await insert([record], on: database).isEmpty { throw OfferStoreError.duplicateNonce(record.nonce) }
        try await IssuedRollup.add([record], on: database)
    }

    /// Inserts records with one multi-row statement; returns the records inserted (any other was recorded before),
    /// each once.
    static func insert(_ records: [IssuedSignature], countingDaily: Bool = false, on database: any SQLDatabase) async throws -> Set<RecordIdentity> {
        Set(
            try await database.raw("\(IssuedSignatureInsert(records: records, ignoringDuplicates: true, countingDaily: countingDaily))").all(
                decoding: RecordIdentity.self
            )
        )
    }

    /// What identifies a record in the log: its timestamp and nonce (the unique index of schema version 6).
    struct RecordIdentity: Hashable, Decodable {
        var timestamp: Int64, nonce: String
        init(_ record: IssuedSignature) { (timestamp, nonce) = (record.timestamp, record.nonce) }
        init(timestamp: Int64, nonce: String) { (self.timestamp, self.nonce) = (timestamp, nonce) }
    }
}
