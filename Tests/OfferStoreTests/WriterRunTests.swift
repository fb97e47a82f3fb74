import Foundation
import Logging
import NIOCore
import NIOPosix
import OfferModel
import SQLKit
import Synchronization
import Testing

@testable import OfferStore

extension GroupCommitQueue {
    /// Submits `item` and returns once it is written; throws its error.
    func submitted(_ item: Item) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            submit(item) { continuation.resume(with: $0) }
        }
    }
}

/// The group-commit writer's runs (``GroupCommitQueue/Run``) and, on PostgreSQL, its thread
/// (``EventLoopTaskExecutor``) and the connection a run leases.
@Suite struct WriterRunTests {
    /// A bundle identifier no other test uses, so tests sharing a PostgreSQL database do not meet.
    let app = "com.example.test-\(UUID().uuidString.prefix(8).lowercased())"

    private func signature() -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: app,
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            applicationUsername: "user-1",
            timestamp: 1_800_000_000_000,
            format: "legacy"
        )
    }

    @Test("a task that prefers an event loop's executor runs on that loop, before and after each await")
    func taskRunsOnItsEventLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let seen = await Task.detached(executorPreference: EventLoopTaskExecutor(loop)) { () async -> [Bool] in
            var seen = [loop.inEventLoop]
            await Task.yield()
            seen.append(loop.inEventLoop)
            _ = try? await loop.submit { 1 }.get()
            seen.append(loop.inEventLoop)
            return seen
        }.value
        #expect(seen == [true, true, true])
        try await group.shutdownGracefully()
    }

    @Test("one run of the writer sets up once for every batch queued while it runs, then ends; the next item starts another")
    func oneSetUpPerRun() async throws {
        let runs = Mutex(0)
        let batches = Mutex([Int]())
        let (firstBatchStarted, started) = AsyncStream.makeStream(of: Void.self)
        let (releaseFirst, release) = AsyncStream.makeStream(of: Void.self)
        let queue = GroupCommitQueue<Int>(maximumBatch: 100, executor: nil) { write in
            runs.withLock { $0 += 1 }
            await write { items in
                let first = batches.withLock { batches in
                    batches.append(items.count)
                    return batches.count == 1
                }
                if first {
                    started.yield()
                    for await _ in releaseFirst { break }
                }
                return items.map { _ in nil }
            }
        }
        let (outcomes, outcome) = AsyncStream.makeStream(of: Bool.self)
        queue.submit(0) { outcome.yield((try? $0.get()) != nil) }
        for await _ in firstBatchStarted { break }
        // Queued while the first batch is being written (submit returns once queued): the run's second batch.
        for item in 1...5 { queue.submit(item) { outcome.yield((try? $0.get()) != nil) } }
        release.yield()
        var succeeded = 0
        for await ok in outcomes {
            if ok { succeeded += 1 }
            if succeeded == 6 { break }
        }
        await queue.drain()
        #expect(runs.withLock { $0 } == 1)
        #expect(batches.withLock { $0 } == [1, 5])
        try await queue.submitted(6)
        #expect(runs.withLock { $0 } == 2)
        await queue.close()
    }

    @Test("a run that cannot set up fails the batches queued with its reason; the next run writes")
    func failedSetUpFailsItsBatches() async throws {
        struct NoConnection: Error {}
        let attempts = Mutex(0)
        let queue = GroupCommitQueue<Int>(maximumBatch: 100, executor: nil) { write in
            let attempt = attempts.withLock { attempts in
                attempts += 1
                return attempts
            }
            if attempt == 1 {
                await write { _ in throw NoConnection() }
            } else {
                await write { items in items.map { _ in nil } }
            }
        }
        await #expect(throws: NoConnection.self) { try await queue.submitted(1) }
        try await queue.submitted(2)
        await queue.close()
    }

    @Test("a connection the server ends fails at most the batch that meets it; the next batch is written", .enabled(if: Backend.postgresURL != nil))
    func writesAfterTheServerEndsAConnection() async throws {
        let (store, _) = try await Backend.postgres.open()
        let backend = try #require((store as? SQLOfferStore)?.backend as? PostgresBackend)
        try await store.record(signature())
        // The pool's idle connection — the one the writer's run leased and released when nothing more was queued —
        // ended by the server, from another connection.
        let terminated = try await backend.read { database in
            let pid = try #require(try await database.raw("SELECT pg_backend_pid() AS pid").first(decodingColumn: "pid", as: Int32.self))
            return try await backend.read { other in
                try await other.raw("SELECT pg_terminate_backend(\(bind: pid)) AS done").first(decodingColumn: "done", as: Bool.self)
            }
        }
        #expect(terminated == true)
        var written = 0
        var failures = 0
        while written < 2, failures < 2 {
            do {
                try await store.record(signature())
                written += 1
            } catch let error as OfferStoreError {
                #expect(error.code == .unavailable)
                failures += 1
            }
        }
        #expect(written == 2)
        #expect(try await store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: app)) == 3)
        try await store.close()
    }
}
