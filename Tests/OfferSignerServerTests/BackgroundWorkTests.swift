import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOPosix
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferStore
import Synchronization
import Testing

@testable import OfferApplication

#if canImport(Glibc)
import Glibc
#endif

/// Reports, dry-runs and backfills where signing cannot feel them (issue 38): the background lane, one dry-run at a
/// time per replica, and the refusals that must come before any work (docs/policy.md "Dry-run", docs/api.md).
@Suite struct BackgroundWorkTests {
    static let token = "0123456789abcdef0123"

    func router(_ history: DryRunHistory) throws -> Router<OfferSignerRequestContext> {
        buildRouter(
            useCases: OfferSignerUseCases(pipeline: history.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "carol:\(Self.token)")
        )
    }

    func post(_ client: some TestClientProtocol, _ uri: String, _ body: ByteBuffer) async throws -> TestResponse {
        try await client.execute(
            uri: uri,
            method: .post,
            headers: [.contentType: "application/yaml", .authorization: "Bearer \(Self.token)"],
            body: body
        )
    }

    func get(_ client: some TestClientProtocol, _ uri: String) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get, headers: [.authorization: "Bearer \(Self.token)"])
    }

    @Test("work on the background lane runs on a thread of its own at nice 19, never on an event loop", .enabled(if: isLinux))
    func laneThread() async throws {
        let (onLane, niceness, onEventLoop) = await BackgroundLane.shared.run {
            (BackgroundLane.shared.isCurrentThread, Self.currentNiceness(), MultiThreadedEventLoopGroup.currentEventLoop != nil)
        }
        #expect(onLane)
        #expect(niceness == BackgroundLane.niceness)
        #expect(!onEventLoop)
        #expect(!BackgroundLane.shared.isCurrentThread)  // back where the test runs
    }

    @Test(
        "a second dry-run while one replays is 429 dry_run_running with Retry-After; the first is answered; then another may run",
        arguments: StoreBackend.available
    )
    func oneDryRunAtATime(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        // The first dry-run holds, on the lane, with the slot taken, until the test lets it go.
        let (started, startedContinuation) = AsyncStream<(onLane: Bool, onEventLoop: Bool)>.makeStream()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        history.service.dryRunSlot.willReplay.withLock {
            $0 = {
                startedContinuation.yield((BackgroundLane.shared.isCurrentThread, MultiThreadedEventLoopGroup.currentEventLoop != nil))
                for await _ in release { break }
            }
        }
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            async let first = post(client, "/admin/policy/dry-run", ByteBuffer(string: history.looser))
            var events = started.makeAsyncIterator()
            let where_ = try #require(await events.next())
            #expect(where_.onLane && !where_.onEventLoop)  // the replay runs on the background lane
            let second = try await post(client, "/admin/policy/dry-run", ByteBuffer(string: history.looser))
            #expect(second.status == .tooManyRequests)
            #expect(second.headers[.retryAfter] == "\(PolicyAdministration.dryRunRetryAfterSeconds)")
            let error = try second.decode(ErrorBody.self).error
            #expect(error.code == "dry_run_running")
            #expect(error.message.contains("already running"))
            history.service.dryRunSlot.willReplay.withLock { $0 = nil }
            releaseContinuation.yield()
            let answered = try await first
            #expect(answered.status == .ok, "\(answered.text)")
            #expect(try await post(client, "/admin/policy/dry-run", ByteBuffer(string: history.looser)).status == .ok)
        }
        try await history.store.close()
    }

    @Test(
        "a candidate looking back further than the log kept is refused from the log's lookbacks, before any snapshot is read",
        arguments: StoreBackend.available
    )
    func needsFactsRefusedBeforeReplay(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        // Decisions that kept no issued signatures, on snapshots that cannot even be read back: a replay could
        // only say it read nothing; the log's lookbacks alone say which rule needs what.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for index in 0..<3 {
            history.store.logDecision(
                PolicyDecisionRecord(
                    decidedAt: now - Int64(index + 1) * 1_000,
                    channel: "legacy",
                    bundleIdentifier: history.bundle,
                    productIdentifier: DryRunHistory.product,
                    offerIdentifier: "winback",
                    retentionEntry: nil,
                    customerHash: "0123456789ab",
                    policyVersion: String(repeating: "0", count: 64),
                    granted: true,
                    reasons: "",
                    lookbackSeconds: 0,
                    factsHash: "unreadable-\(history.bundle)",
                    factsSnapshot: "not a snapshot"
                )
            )
        }
        await history.store.flushDecisionLog()
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            let refused = try await post(
                client,
                "/admin/policy/dry-run",
                ByteBuffer(string: history.policy(winback: "[{ cap: { count: 2, days: 60 } }]"))
            )
            #expect(refused.status == .unprocessableContent)
            let error = try refused.decode(ErrorBody.self).error
            #expect(error.code == "dry_run_needs_facts")
            #expect(error.message.contains("cap (looks back 60 days; the log kept no issued signatures"), "\(error.message)")
        }
        try await history.store.close()
    }

    @Test("a candidate that is not UTF-8 is 400 invalid_policy, not dry-run as another text")
    func nonUTF8Candidate() async throws {
        let history = try await DryRunHistory(.sqlite)
        try await history.make()
        var bytes = ByteBuffer(string: history.looser + "\n# ")
        bytes.writeBytes([0xFF, 0xFE, 0x80])  // never UTF-8; a lossy decoding turns them into U+FFFD in a comment
        bytes.writeString("\n")
        let body = bytes
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            let refused = try await post(client, "/admin/policy/dry-run", body)
            #expect(refused.status == .badRequest)
            let error = try refused.decode(ErrorBody.self).error
            #expect(error.code == "invalid_policy")
            #expect(error.message.contains("UTF-8"))
            #expect(try await post(client, "/admin/policy/dry-run", ByteBuffer(string: history.looser)).status == .ok)
        }
        try await history.store.close()
    }

    @Test(
        "a query parameter given twice is 400 invalid_request naming it, on the admin routes",
        arguments: [
            ("/admin/policy/dry-run?days=1&days=3650", "days"),
            ("/admin/policy/dry-run?days=7&%64ays=3650", "days"),
            ("/admin/outcomes?from=2026-01-01&to=2026-02-01&from=2025-02-01", "from"),
            ("/admin/outcomes/daily?bundleId=a&bundleId=b", "bundleId"),
        ]
    )
    func repeatedQueryParameter(_ uri: String, _ name: String) async throws {
        let history = try await DryRunHistory(.sqlite)
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            let response =
                uri.hasPrefix("/admin/policy")
                ? try await post(client, uri, ByteBuffer(string: history.looser))
                : try await get(client, uri)
            #expect(response.status == .badRequest)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.code == "invalid_request")
            #expect(error.field == name)
            #expect(error.message.contains("more than once"))
            // Given once, the same route answers.
            #expect(try await get(client, "/admin/outcomes?from=2026-01-01&to=2026-02-01").status == .ok)
        }
        try await history.store.close()
    }

    static var isLinux: Bool {
        #if os(Linux)
        true
        #else
        false
        #endif
    }

    static func currentNiceness() -> Int32 {
        #if os(Linux)
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
        0
        #endif
    }
}
