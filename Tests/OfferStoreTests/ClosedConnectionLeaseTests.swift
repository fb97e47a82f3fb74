import Dispatch
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

@testable import OfferStore

/// A connection whose socket closed, lent by postgres-nio before it has seen the close (it sees it one event-loop tick
/// later, when the channel's handlers are removed): a statement sent on it is never answered, so a lease must not run
/// its work on it (``PostgresConnections``). What a store met when PostgreSQL stopped under it (StoreOutageTests hung).
@Suite(.enabled(if: Backend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct ClosedConnectionLeaseTests {
    /// When the connection closes.
    enum Closing: String, CaseIterable, Sendable {
        /// While a lease holds it (the server ended it, the lease's statement failed): the lease gives it back closed.
        case underALease
        /// While it waits in the pool (a database that stopped closes every connection).
        case whileIdle
    }

    @Test(
        "a lease lent a connection that closed before the pool saw it close runs its work on another, and is answered",
        arguments: Closing.allCases
    )
    func closedConnectionIsNotUsed(_ closing: Closing) async throws {
        // One connection: the second lease is lent the first one's. A limit whose quarter (which sets off a check of
        // the database) falls after the test's own deadline: on a loaded machine the second lease may wait for its
        // fresh connection longer than a quarter of a short limit, and a check that then cannot connect within a
        // second takes the database for down, which is not what is tested.
        let (connections, loops) = try Self.connections(maximumConnections: 1, waitLimit: .seconds(60))
        // The connection is closed on its event loop, which then stays busy — up to a second, or until the second
        // lease's work starts — before it removes the channel's handlers and tells the pool: the second lease is
        // lent the closed connection in that tick.
        let loopHeld = DispatchSemaphore(value: 0)
        @Sendable func closeHoldingTheLoop(_ connection: PostgresConnection) async throws {
            connection.eventLoop.execute {
                let closed: EventLoopFuture<Void> = connection.close()
                _ = closed
                _ = loopHeld.wait(timeout: .now() + .seconds(1))
            }
            while !connection.isClosed { try await Task.sleep(for: .milliseconds(1)) }
        }
        let first = try await connections.withConnection { connection in
            if closing == .underALease { try await closeHoldingTheLoop(connection) }
            return connection
        }
        if closing == .whileIdle { try await closeHoldingTheLoop(first) }
        let answered = AnsweredFlag()
        // Not awaited: a statement never answered would hang the test instead of failing it.
        let work = Task {
            defer { answered.set() }
            return try await connections.withConnection { connection in
                loopHeld.signal()
                var values: [Int] = []
                for try await value in try await connection.query("SELECT 1", logger: Logger(label: "test")).decode(Int.self) {
                    values.append(value)
                }
                return values
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !answered.isSet, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(answered.isSet, "the statement sent on the connection lent after it closed was never answered")
        if answered.isSet { #expect(try await work.value == [1]) }
        await connections.close()
        try await loops.shutdownGracefully()
    }
}

extension ClosedConnectionLeaseTests {
    /// Connections to the test database on an event loop of their own (`maximumConnections`: the pool's, if given).
    static func connections(maximumConnections: Int? = nil, waitLimit: Duration) throws -> (PostgresConnections, MultiThreadedEventLoopGroup) {
        var configuration = try PostgresBackend.configuration(databaseURL: try #require(Backend.postgresURL))
        if let maximumConnections { configuration.options.maximumConnections = maximumConnections }
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let connections = PostgresConnections(
            configuration: configuration,
            eventLoopGroup: loops,
            logger: Logger(label: "test"),
            waitLimit: waitLimit
        )
        return (connections, loops)
    }

    /// The lease's clock (``CoarseTimers``) wakes no earlier than its points: leases that end well before a quarter of
    /// the limit set off no check, and one whose work holds its connection past half of it does.
    @Test("a lease sets off a check of the database only once its work has held the connection half the limit")
    func leaseClockPoints() async throws {
        let (connections, loops) = try Self.connections(waitLimit: .seconds(8))
        for _ in 0..<20 {
            try await connections.withConnection { _ in try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(connections.checksStarted == 0)
        try await connections.withConnection { _ in try await Task.sleep(for: .milliseconds(4500)) }
        #expect(connections.checksStarted == 1)
        await connections.close()
        try await loops.shutdownGracefully()
    }
}

/// Set by the work as it ends (read by the test while the work may still run).
private final class AnsweredFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
}
