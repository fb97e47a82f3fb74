import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Logging
import OfferApplication
import OfferStore
import Testing

@testable import OfferSignerServer

/// One limit for the fleet: three stores on one PostgreSQL database stand for three replicas; each has its own
/// buckets (``RateLimits``, ``SharedTokenBuckets``) and requests go to them in turn, as a load balancer sends them.
/// Without shared buckets each replica would allow the whole limit: three times it.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct SharedLimitTests {
    /// Three replicas' stores; closed by `body`'s end.
    static func withReplicas(_ body: ([any OfferStore]) async throws -> Void) async throws {
        var stores: [any OfferStore] = []
        do {
            for _ in 0..<3 { stores.append(try await StoreBackend.postgres.open()) }
            try await body(stores)
        } catch {
            for store in stores { try? await store.close() }
            throw error
        }
        for store in stores { try await store.close() }
    }

    /// 100 an hour (no refill to speak of during the test), 300 requests over three replicas: 100 ± 10 % allowed.
    static let limit = Rate(count: 100, seconds: 3_600)

    @Test func threeReplicasShareOneClientLimit() async throws {
        try await Self.withReplicas { stores in
            let limits = stores.map { RateLimits(RateLimitConfiguration(client: Self.limit, clientExplicit: true), shared: $0.sharedLimits) }
            let credential = "key:fleet-\(UUID().uuidString)"
            var allowed = 0
            for request in 0..<300 {
                do throws(APIError) {
                    try await limits[request % 3].admit(credential: credential, identity: .apiKey(name: "fleet"))
                    allowed += 1
                } catch {
                    #expect(error.code.rawValue == "rate_limited")
                }
            }
            #expect((90...110).contains(allowed), "allowed \(allowed) of 300 under a fleet limit of 100")
        }
    }

    /// The event-loop path's admission, which never waits.
    static func admitsAtOnce(_ limits: RateLimits, customer: String) -> Bool {
        (try? limits.admit(customer: customer, identity: .open)) != nil
    }

    @Test func threeReplicasShareOneCustomerLimitOnTheEventLoopPath() async throws {
        try await Self.withReplicas { stores in
            let limits = stores.map { RateLimits(RateLimitConfiguration(customer: Self.limit, customerExplicit: true), shared: $0.sharedLimits) }
            let customer = "fleet-\(UUID().uuidString.lowercased())"
            var allowed = 0
            // The event-loop path cannot wait for a lease: a replica that must ask refuses at once, and the next
            // request finds the lease.
            for request in 0..<600 {
                if Self.admitsAtOnce(limits[request % 3], customer: customer) { allowed += 1 }
                if request % 3 == 2 { try await Task.sleep(for: .milliseconds(2)) }
            }
            #expect((90...110).contains(allowed), "allowed \(allowed) of 600 under a fleet limit of 100")
        }
    }

    /// Failed admin authentications and console sign-ins (one limiter, ``AdminAuthenticationMiddleware``): 10 at
    /// once, then one per 6 s, for the fleet.
    @Test func threeReplicasShareTheFailedSignInThrottle() async throws {
        try await Self.withReplicas { stores in
            let failures = try stores.map { store in
                SharedTokenBuckets(
                    kind: "admin-failures",
                    rate: 1 / AdminAuthenticationMiddleware.secondsPerFailure,
                    burst: AdminAuthenticationMiddleware.failureBurst,
                    store: try #require(store.sharedLimits)
                )
            }
            let address = "192.0.2.\(Int.random(in: 1...254))-\(UUID().uuidString)"
            let start = ContinuousClock.now
            var allowed = 0
            for attempt in 0..<60 {
                if await failures[attempt % 3].take(address) == .allowed { allowed += 1 }
            }
            let refilled = Int((ContinuousClock.now - start) / .seconds(AdminAuthenticationMiddleware.secondsPerFailure))
            // Takes that can wait never owe: never more than the fleet's 10 and what refilled meanwhile.
            #expect((10...(10 + refilled)).contains(allowed), "allowed \(allowed) of 60 failures, limit 10 and one per 6 s")
        }
    }

    @Test func tokensNotSpentGoBackToTheFleet() async throws {
        try await Self.withReplicas { stores in
            let shared = try stores.map { try #require($0.sharedLimits) }
            let first = SharedTokenBuckets(kind: "client", rate: 100.0 / 3_600, burst: 100, store: shared[0])
            let key = "key:returned-\(UUID().uuidString)"
            #expect(await first.take(key) == .allowed)  // leases a chunk (5) beyond the one spent
            try await Task.sleep(for: .milliseconds(2_500))  // unused for a second: given back
            let others = [shared[1], shared[2]].map { SharedTokenBuckets(kind: "client", rate: 100.0 / 3_600, burst: 100, store: $0) }
            var allowed = 0
            for attempt in 0..<200 {
                if await others[attempt % 2].take(key) == .allowed { allowed += 1 }
            }
            #expect((97...100).contains(allowed), "the others got \(allowed) of the 99 left")
        }
    }

    /// The store gone: each replica decides alone with its own full limit (never unlimited).
    @Test func aReplicaWhoseStoreFailsFallsBackToItsOwnLimit() async throws {
        let store = try await StoreBackend.postgres.open()
        let shared = try #require(store.sharedLimits)
        try await store.close()
        let failures = SharedTokenBuckets(kind: "admin-failures", rate: 1 / 6, burst: 10, store: shared)
        var allowed = 0
        for _ in 0..<50 {
            if await failures.take("198.51.100.7") == .allowed { allowed += 1 }
        }
        #expect((10...12).contains(allowed), "allowed \(allowed) of 50 with the store closed")
    }

    @Test func theTableHoldsNoRawKey() async throws {
        try await Self.withReplicas { stores in
            let buckets = SharedTokenBuckets(kind: "customer", rate: 1, burst: 20, store: try #require(stores[0].sharedLimits))
            let name = buckets.bucket("alice@example.com")
            #expect(name.hasPrefix("customer:") && !name.contains("alice") && name.count == "customer:".count + 64)
            #expect(await buckets.take("alice@example.com") == .allowed)
        }
    }
}

/// The replica's side of the fleet's buckets, without a database.
@Suite struct SharedBucketLedgerTests {
    @Test func aFirstTakeIsOwedThenPaidFirstFromTheLease() {
        var ledger = SharedBucketLedger(rate: 1, burst: 100)  // chunk 5
        let now = ContinuousClock.now
        #expect(ledger.take("a", now: now) == .allowed)
        #expect(ledger.take("a", now: now) == .allowed)
        #expect(ledger.leases().map(\.wanted) == [7])  // the chunk and the two owed
        ledger.granted("a", 7, secondsToNextToken: 0, now: now)
        #expect(ledger.entries["a"]?.tokens == 5)
    }

    @Test("a take that can wait owes nothing: it asks, and the lease's answer decides it")
    func aWaitingTakeNeverOwes() {
        var ledger = SharedBucketLedger(rate: 0.1, burst: 10)  // chunk 2
        let now = ContinuousClock.now
        #expect(ledger.take("a", now: now, waiting: true) == .ask)
        #expect(ledger.take("a", now: now, waiting: true) == .ask, "no credit while the lease is out")
        #expect(ledger.leases().map(\.wanted) == [2])
        ledger.granted("a", 1, secondsToNextToken: 10, now: now)
        #expect(ledger.take("a", now: now, waiting: true) == .allowed)
        #expect(ledger.take("a", now: now, waiting: true) == .ask, "the next lease went out as the last token was spent")
        #expect(ledger.leases().map(\.wanted) == [2])
        ledger.granted("a", 0, secondsToNextToken: 9.5, now: now)
        #expect(ledger.take("a", now: now, waiting: true) == .limited(retryAfterSeconds: 10))
    }

    @Test func aBucketFoundEmptyIsRememberedAndOwesNothing() {
        var ledger = SharedBucketLedger(rate: 0.5, burst: 10)  // chunk 2, fills in 20 s
        let now = ContinuousClock.now
        #expect(ledger.take("a", now: now) == .allowed)
        _ = ledger.leases()
        ledger.granted("a", 0, secondsToNextToken: 1.5, now: now)
        #expect(ledger.take("a", now: now) == .limited(retryAfterSeconds: 2))
        #expect(ledger.sweep(now: now + .seconds(5)).isEmpty)
        #expect(ledger.entries["a"] != nil, "kept until the bucket would be full again")
        #expect(ledger.take("a", now: now + .seconds(5)) == .ask)  // no debt: a lease first
        #expect(ledger.leases().map(\.wanted) == [2])
    }

    @Test func unspentTokensGoBackAfterAnIdleSecond() {
        var ledger = SharedBucketLedger(rate: 10, burst: 100)
        let now = ContinuousClock.now
        _ = ledger.take("a", now: now)
        _ = ledger.leases()
        ledger.granted("a", 6, secondsToNextToken: 0, now: now)
        #expect(ledger.sweep(now: now + .milliseconds(500)).isEmpty)
        let returned = ledger.sweep(now: now + .seconds(2))
        #expect(returned.map(\.bucket) == ["a"] && returned.map(\.count) == [5])
        #expect(ledger.entries.isEmpty)
    }
}

/// Apple's per-app quota kept by the fleet (``SharedAppStoreQuota``): three replicas' App Store Server API clients,
/// each allowed 10 requests a second to Production by its own limiter, ask Apple for 30 customers at once within a
/// 0.5 s budget. With the quota shared, Apple sees the fleet's 10 (its burst), give or take a lease's share; alone,
/// each client would send its own 10: 30.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct SharedAppStoreQuotaTests {
    let appKey = P256.Signing.PrivateKey()
    let bundle = "com.example.quota-\(UUID().uuidString.prefix(8).lowercased())"

    /// A client of the fake on `port` allowed 10 requests a second, with `quota` (nil: alone).
    func client(port: Int, quota: (any AppStoreQuota)?) throws -> AppStoreServerAPIClient {
        let settings = AppStoreAPISettings(
            keyIdentifier: FakeAppStore.keyIdentifier,
            privateKeyPEM: appKey.pemRepresentation,
            issuerId: FakeAppStore.issuerId,
            baseURL: "http://127.0.0.1:\(port)/production",
            timeout: .milliseconds(500),
            cacheTimeToLive: .seconds(60)
        )
        let app = AppConfiguration(bundleIdentifier: bundle, issuerIdentifier: FakeAppStore.issuerId, appAppleId: FakeAppStore.appAppleId)
        var configuration = try settings.clientConfiguration(for: app, environments: [.production])
        configuration.rateLimit = .init(productionPerSecond: 10, sandboxPerSecond: 1)
        configuration.retry.maximumAttempts = 1
        let verifier = try SignedDataVerifier(
            bundleIdentifier: bundle,
            appAppleId: FakeAppStore.appAppleId,
            environments: [.production],
            trustedRoots: [try TestCertificateChain().root]
        )
        return try AppStoreServerAPIClient(configuration: configuration, verifier: verifier, quota: quota)
    }

    /// How many of 30 requests, 10 a client at once, reach the fake App Store.
    func requestsApple(shared: Bool, stores: [any OfferStore]) async throws -> Int {
        let fake = FakeAppStore(appKey: appKey, bundleIdentifier: bundle) { _ in .error(.notFound, code: 4_040_010) }
        return try await fake.run { port in
            let clients = try stores.map { store in
                try client(
                    port: port,
                    quota: shared ? store.sharedLimits.map { SharedAppStoreQuota(.init(productionPerSecond: 10), store: $0) } : nil
                )
            }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<30 {
                    let client = clients[index % 3]
                    group.addTask { _ = try? await client.subscriptionStatuses(forTransaction: "\(2_000_000_000_000_000 + index)") }
                }
            }
            return await fake.ledger.total
        }
    }

    @Test func threeReplicasShareApplesQuota() async throws {
        try await SharedLimitTests.withReplicas { stores in
            let alone = try await requestsApple(shared: false, stores: stores)
            #expect(alone == 30, "each client alone sends its own 10")
            let shared = try await requestsApple(shared: true, stores: stores)
            // Never more than the fleet's burst of 10, the tokens the bucket gained while the 0.5 s ran (5) and a
            // lease's share a replica may spend before its lease answers; a few fewer when a replica still holds
            // leased tokens its own requests did not need (given back after an idle second).
            #expect((7...16).contains(shared), "\(shared) of 30 requests reached Apple under a fleet quota of 10 a second")
        }
    }
}
