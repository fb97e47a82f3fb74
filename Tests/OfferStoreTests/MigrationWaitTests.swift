import Logging
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// A migration waits for another process's under the migration lock, for as long as that one takes (a replica
/// starting beside another, or ~100 stores of the test suite opening at once on a fresh database). That wait is not
/// a database gone silent: it must set off no check, which on a loaded machine — a fresh connection slower than the
/// check's limit — would take the database for down and close the migration's connection (`migration_failed`).
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct MigrationWaitTests {
    @Test("work that waits long on purpose (a migration's) sets off no check of the database; other work as long does")
    func longWaitsOnPurposeAreNotSuspected() async throws {
        let store = try await makeOfferStore(databaseURL: try #require(Backend.postgresStoreURL), logger: Logger(label: "test"), timeout: .seconds(2))
        let backend = try #require((store as? SQLOfferStore)?.backend as? PostgresBackend)
        let before = backend.checksStarted
        // Longer than half the limit, the point at which work on a connection sets off a check.
        try await backend.patiently { database in try await database.raw("SELECT pg_sleep(1.7)").run() }
        #expect(backend.checksStarted == before)
        // A check already under way (a loaded machine's slow lease) starts no second one: try again after it.
        for _ in 0..<3 where backend.checksStarted == before {
            try await backend.write { database in try await database.raw("SELECT pg_sleep(1.7)").run() }
        }
        #expect(backend.checksStarted > before, "the same work, watched, sets one off")
        try await store.close()
    }

    @Test("migrating a store already at the latest version waits for no lock: another process holding it delays nothing")
    func aCurrentStoreTakesNoMigrationLock() async throws {
        let (store, _) = try await Backend.postgres.open()
        let backend = try #require((store as? SQLOfferStore)?.backend as? PostgresBackend)
        let held = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        // Another process's migration: the migration lock, held in an open transaction.
        let holder = Task {
            try await backend.patiently { database in
                try await database.raw("BEGIN").run()
                try await database.raw("SELECT pg_advisory_xact_lock(7245365137)").run()
                held.continuation.yield()
                for await _ in release.stream { break }
                try await database.raw("ROLLBACK").run()
            }
        }
        for await _ in held.stream { break }
        let migrated = Task { try await store.migrate() }
        let outcome = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await migrated.value
                return true
            }
            group.addTask {
                try await Task.sleep(for: .seconds(20))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        release.continuation.yield()
        try await holder.value
        try await migrated.value
        #expect(outcome, "migrate() returned while another process held the migration lock")
        try await store.close()
    }
}
