import Foundation
import OfferModel
import SQLKit
import Synchronization

/// App Store notifications filed in batches (``fileNotification(_:)``): a burst of notifications shares one
/// transaction and one flush instead of paying three or four of each per notification.
extension SQLOfferStore {
    /// The most notifications one transaction files: under a burst, a batch holds the write lock (SQLite) or the
    /// customers' rows (PostgreSQL) for a few milliseconds, not longer.
    static let notificationsPerBatch = 64

    func fileNotification(_ filing: NotificationFiling) async throws -> NotificationFiled {
        let pending = PendingFiling(filing)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            notificationRecorder.submit(pending) { continuation.resume(with: $0) }
        }
        guard let filed = pending.filed else {
            throw OfferStoreError(.unavailable, "\(backend.name) store: the notification's batch ended without an outcome.")
        }
        return filed
    }

    /// Files a batch in one transaction under the customers' locks, flushed once after its `COMMIT`: each
    /// notification behind a savepoint of its own, so one that fails (a subscription claimed by another customer, a
    /// fold that throws) is rolled back alone and told its own error while the others are written.
    ///
    /// On PostgreSQL a batch that ``PostgresNotificationBatch/fits(_:)`` is first filed in one transaction of two
    /// statements (``SQLStoreBackend/notificationBatchFiler``); should that throw for any reason, its transaction is
    /// rolled back and the batch filed here one notification at a time, which says which notification failed and why.
    static func fileNotifications(_ batch: [PendingFiling], backend: any SQLStoreBackend) async throws -> [(any Error)?] {
        if let filer = backend.notificationBatchFiler, PostgresNotificationBatch.fits(batch) {
            if let filed = try? await backend.transaction({ database in try await filer(batch, database) }), filed.count == batch.count {
                for (pending, outcome) in zip(batch, filed) { pending.filed = outcome }
                return Array(repeating: nil, count: batch.count)
            }
        }
        return try await fileOneByOne(batch, backend: backend)
    }

    /// ``fileNotifications(_:backend:)`` a notification at a time: each behind its savepoint, in one transaction.
    static func fileOneByOne(_ batch: [PendingFiling], backend: any SQLStoreBackend) async throws -> [(any Error)?] {
        do {
            return try await backend.transaction(flushAfterCommit: true, prepared: true) { database in
                var outcomes: [(any Error)?] = []
                outcomes.reserveCapacity(batch.count)
                for pending in batch {
                    try await database.run("SAVEPOINT notification")
                    do {
                        let filed = try await file(pending.filing, backend: backend, on: database)
                        try await database.run("RELEASE SAVEPOINT notification")
                        pending.filed = filed
                        outcomes.append(nil)
                    } catch {
                        // A savepoint that cannot be rolled back to (the connection is gone) fails the whole batch.
                        try await database.run("ROLLBACK TO SAVEPOINT notification")
                        try await database.run("RELEASE SAVEPOINT notification")
                        pending.filed = nil
                        outcomes.append(storeError(error, backend: backend))
                    }
                }
                return outcomes
            }
        } catch let error as CallerError {
            throw error.error
        }
    }

    /// One notification's writes, in the order the separate calls make them.
    private static func file(
        _ filing: NotificationFiling,
        backend: any SQLStoreBackend,
        on database: any SQLDatabase
    ) async throws
        -> NotificationFiled
    {
        let applied = try await markProcessed(filing.notificationUUID, on: database)
        if applied { _ = try await update(filing.customer, claiming: filing.claims, on: database, filing.fold) }
        if let transaction = filing.transaction { try await record(transaction, on: database) }
        var redemption: RedemptionRecording?
        if let recorded = filing.redemption { redemption = try await record(recorded, backend: backend, on: database) }
        if let event = filing.event { _ = try await record(event, backend: backend, on: database) }
        return NotificationFiled(applied: applied, redemption: redemption)
    }

    /// Records a `notificationUUID` as processed; `false` when it was before.
    static func markProcessed(_ notificationUUID: String, on database: any SQLDatabase) async throws -> Bool {
        try await database.insert(into: "processed_notifications").columns("notification_uuid", "processed_at")
            .values(SQLBind(notificationUUID), SQLBind(Date().unixMilliseconds))
            .ignoringConflicts(with: "notification_uuid").returning("notification_uuid").first() != nil
    }

    /// An error of one notification of a batch as the store throws it: the caller's own unchanged, a driver's as
    /// `unavailable`.
    private static func storeError(_ error: any Error, backend: any SQLStoreBackend) -> any Error {
        switch error {
        case let error as CallerError: error.error
        case let error as OfferStoreError: error
        default: OfferStoreError(.unavailable, "\(backend.name) store: \(backend.describe(error)).")
        }
    }
}

/// A notification waiting in the batch queue, and what its batch did with it (read once the batch committed).
final class PendingFiling: Sendable {
    let filing: NotificationFiling
    private let outcome = Mutex<NotificationFiled?>(nil)

    init(_ filing: NotificationFiling) { self.filing = filing }

    var filed: NotificationFiled? {
        get { outcome.withLock { $0 } }
        set { outcome.withLock { $0 = newValue } }
    }
}
