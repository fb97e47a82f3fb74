import Foundation
import Logging
@testable import OfferStore
import SQLKit
import Synchronization
import Testing

/// A server's PostgreSQL pool (``makeOfferStore(databaseURL:logger:migrating:keepingConnectionsOpen:)`` keeping
/// its connections open, then ``OfferStore/warmUp()``): every connection has the hot statements prepared before the
/// first request.
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct PostgresWarmUpTests {
    /// The statements ``PostgresBackend/warmUp()`` prepares.
    static let statements = [
        "offer_signer_customers_of_transaction", "offer_signer_facts_and_answer", "offer_signer_claim_batch",
        "offer_signer_record_retention_answers", "offer_signer_issued_batch",
    ]

    /// What each of the pool's connections has prepared, by server process: every connection leased at once.
    private func preparedByConnection(_ store: SQLOfferStore) async throws -> [Int32: Int] {
        let leased = Leased()
        return try await withThrowingTaskGroup(of: (Int32, Int).self) { group in
            for _ in 0..<PostgresBackend.connectionLimit {
                group.addTask {
                    try await store.backend.reading { database in
                        let row = try await database.raw("""
                            SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM pg_prepared_statements WHERE name IN (\(binds: Self.statements))) AS prepared
                            """).first()
                        leased.count.withLock { $0 += 1 }
                        let deadline = ContinuousClock.now + .seconds(5)
                        while leased.count.withLock({ $0 }) < PostgresBackend.connectionLimit, ContinuousClock.now < deadline {
                            try await Task.sleep(for: .milliseconds(1))
                        }
                        return (try row?.decode(column: "pid", as: Int32.self) ?? 0, try row?.decode(column: "prepared", as: Int.self) ?? 0)
                    }
                }
            }
            return try await group.reduce(into: [Int32: Int]()) { $0[$1.0] = $1.1 }
        }
    }

    @Test("a server's store keeps all its connections open, each with the signing and retention statements prepared")
    func warmedConnections() async throws {
        let url = try #require(Backend.postgresURL)
        let warmed = try #require(try await makeOfferStore(databaseURL: url, logger: Logger(label: "test"), keepingConnectionsOpen: true) as? SQLOfferStore)
        await warmed.warmUp()
        let prepared = try await preparedByConnection(warmed)
        #expect(prepared.count == PostgresBackend.connectionLimit)
        #expect(prepared.values.allSatisfy { $0 == Self.statements.count })
        try await warmed.close()

        // A store that is not warmed prepares at first use: its connections start with nothing prepared.
        let cold = try #require(try await makeOfferStore(databaseURL: url, logger: Logger(label: "test")) as? SQLOfferStore)
        let coldPrepared = try await preparedByConnection(cold)
        #expect(coldPrepared.count == PostgresBackend.connectionLimit)
        #expect(coldPrepared.values.allSatisfy { $0 == 0 })
        try await cold.close()
    }
}

/// How many of the test's leases hold a connection.
private final class Leased: Sendable {
    let count = Mutex(0)
}
