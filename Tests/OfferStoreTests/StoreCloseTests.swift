import Logging
import OfferModel
import SQLKit
import Synchronization
import Testing

@testable import OfferStore

/// Closing a PostgreSQL store while work holds a connection: the work's statements fail (their connection closes)
/// and the store's event loops shut down only after the work has ended. A statement submitted to an event loop that
/// is shut down would never be answered (its caller would wait forever; a debug build stops on the leaked promise).
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct StoreCloseTests {
    @Test("work under way when the store closes ends with an error, even a statement it sends after; close waits for it")
    func closeWaitsForTheWorkUnderWay() async throws {
        let store = try await makeOfferStore(databaseURL: try #require(Backend.postgresStoreURL), logger: Logger(label: "test"), timeout: .seconds(5))
        let backend = try #require((store as? SQLOfferStore)?.backend as? PostgresBackend)
        let started = AsyncStream<Void>.makeStream()
        let ended = EndedFlag()
        let failed = EndedFlag()
        // A transaction's body, then its ROLLBACK after the failure: a second statement sent after the connection
        // closed under the first.
        let work = Task {
            try? await backend.write { database in
                started.continuation.yield()
                do {
                    try await database.raw("SELECT pg_sleep(5)").run()
                } catch {
                    failed.set()
                    try? await Task.sleep(for: .milliseconds(300))
                    try? await database.raw("ROLLBACK").run()
                }
                ended.set()
            }
        }
        for await _ in started.stream { break }
        try await Task.sleep(for: .milliseconds(50))
        try await store.close()
        #expect(ended.isSet, "close() returned while the work still held its connection")
        #expect(failed.isSet, "the work's statement was not ended by the close")
        // Not awaited: a hung statement would hang the test instead of failing it.
        let deadline = ContinuousClock.now + .seconds(10)
        while !ended.isSet, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(ended.isSet, "the work's statement after the close was never answered")
        _ = work
    }
}

/// Set by the work as it ends (read by the test while the work may still run).
private final class EndedFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
