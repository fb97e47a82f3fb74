import Foundation
import Logging
import OfferModel
import SQLKit
import Synchronization
import Testing

@testable import OfferStore

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

    /// What `count` of the pool's connections have prepared, by server process: that many leased at once.
    private func preparedByConnection(_ store: SQLOfferStore, count: Int = PostgresBackend.connectionLimit) async throws -> [Int32: Int] {
        let leased = Leased()
        return try await withThrowingTaskGroup(of: (Int32, Int).self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await store.backend.reading { database in
                        let row = try await database.raw(
                            """
                            SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM pg_prepared_statements WHERE name IN (\(binds: Self.statements))) \
                            AS prepared
                            """
                        ).first()
                        leased.count.withLock { $0 += 1 }
                        let deadline = ContinuousClock.now + .seconds(5)
                        while leased.count.withLock({ $0 }) < count, ContinuousClock.now < deadline {
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
        let warmed = try #require(
            try await makeOfferStore(databaseURL: url, logger: Logger(label: "test"), keepingConnectionsOpen: true) as? SQLOfferStore
        )
        // The suite's other stores share the server's connections: should it refuse some for a while, a warm-up
        // may not reach every connection, and it is run again (it only prepares what is prepared already), three
        // times at most.
        var prepared: [Int32: Int] = [:]
        for _ in 0..<3 {
            await warmed.warmUp()
            prepared = try await preparedByConnection(warmed)
            if prepared.count == PostgresBackend.connectionLimit, prepared.values.allSatisfy({ $0 == Self.statements.count }) { break }
        }
        #expect(prepared.count == PostgresBackend.connectionLimit)
        #expect(prepared.values.allSatisfy { $0 == Self.statements.count })
        try await warmed.close()

        // A store that is not warmed prepares at first use: its connections start with nothing prepared (two of
        // them, leased at once: the suite's other stores share the server's connections).
        let cold = try #require(try await makeOfferStore(databaseURL: url, logger: Logger(label: "test")) as? SQLOfferStore)
        let coldPrepared = try await preparedByConnection(cold, count: 2)
        #expect(coldPrepared.count == 2)
        #expect(coldPrepared.values.allSatisfy { $0 == 0 })
        try await cold.close()
    }
}

/// How many of the test's leases hold a connection.
private final class Leased: Sendable {
    let count = Mutex(0)
}
