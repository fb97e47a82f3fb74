import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Logging
import OfferApplication
import OfferErrors
import OfferModel
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
            let limits = stores.map {
                RateLimits(RateLimitConfiguration(client: Self.limit, clientExplicit: true), shared: $0.sharedLimits.map(FleetRateLimits.init))
            }
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
            let limits = stores.map {
                RateLimits(RateLimitConfiguration(customer: Self.limit, customerExplicit: true), shared: $0.sharedLimits.map(FleetRateLimits.init))
            }
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
                    store: FleetRateLimits(try #require(store.sharedLimits))
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

    /// Callers that can wait, many at once on each replica: each asks again after every lease its replica gets, so
    /// the fleet's whole burst is spent, and no more (a refill of one token takes six minutes). No time budget: a
    /// loaded machine makes the leases slower, not fewer.
    @Test func waitingCallersAtOnceSpendTheFleetsWholeBurst() async throws {
        try await Self.withReplicas { stores in
            let buckets = try stores.map { store in
                SharedTokenBuckets(kind: "client", rate: 10.0 / 3_600, burst: 10, store: FleetRateLimits(try #require(store.sharedLimits)))
            }
            let key = "key:together-\(UUID().uuidString)"
            let allowed = await withTaskGroup(of: Bool.self) { group in
                for caller in 0..<30 {
                    let replica = buckets[caller % 3]
                    group.addTask { await replica.take(key) == .allowed }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(allowed == 10, "allowed \(allowed) of 30 callers waiting at once on three replicas, fleet burst 10")
        }
    }

    @Test func tokensNotSpentGoBackToTheFleet() async throws {
        try await Self.withReplicas { stores in
            let shared = try stores.map { FleetRateLimits(try #require($0.sharedLimits)) }
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
        let shared = FleetRateLimits(try #require(store.sharedLimits))
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
            let buckets = SharedTokenBuckets(kind: "customer", rate: 1, burst: 20, store: FleetRateLimits(try #require(stores[0].sharedLimits)))
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
/// each allowed 10 requests a second to Production by its own limiter, ask Apple for 30 customers at once, each within
/// a budget no loaded machine exhausts. Alone, each client sends its own 10 at once: 30. With the quota shared, Apple
/// never sees more than the fleet's burst of 10 and 10 a second after it — however late a loaded machine lets the
/// requests go, which only spreads them further — and every request waits for its token within its budget: all 30
/// reach Apple, 10 a second.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct SharedAppStoreQuotaTests {
    let appKey = P256.Signing.PrivateKey()
    let bundle = "com.example.quota-\(UUID().uuidString.prefix(8).lowercased())"
    /// The fleet's quota and each client's own limit: 10 requests a second, a burst of 10.
    static let rate = 10.0

    /// A client of the fake on `port` allowed 10 requests a second, with `quota` (nil: alone), each call within 30 s.
    func client(port: Int, quota: (any AppStoreQuota)?) throws -> AppStoreServerAPIClient {
        let settings = AppStoreAPISettings(
            keyIdentifier: FakeAppStore.keyIdentifier,
            privateKeyPEM: appKey.pemRepresentation,
            issuerId: FakeAppStore.issuerId,
            baseURL: "http://127.0.0.1:\(port)/production",
            timeout: .seconds(30),
            cacheTimeToLive: .seconds(60)
        )
        let app = AppConfiguration(bundleIdentifier: bundle, issuerIdentifier: FakeAppStore.issuerId, appAppleId: FakeAppStore.appAppleId)
        var configuration = try settings.clientConfiguration(for: app, environments: [.production])
        configuration.rateLimit = .init(productionPerSecond: Self.rate, sandboxPerSecond: 1)
        configuration.retry.maximumAttempts = 1
        let verifier = try SignedDataVerifier(
            bundleIdentifier: bundle,
            appAppleId: FakeAppStore.appAppleId,
            environments: [.production],
            trustedRoots: [try TestCertificateChain().root]
        )
        return try AppStoreServerAPIClient(configuration: configuration, verifier: verifier, quota: quota)
    }

    /// 30 requests, 10 a client at once: when each reached the fake App Store, from the moment before they were sent,
    /// and how many failed.
    func requestsApple(shared: Bool, stores: [any OfferStore]) async throws -> (arrivals: [Duration], failed: Int) {
        let fake = FakeAppStore(appKey: appKey, bundleIdentifier: bundle) { _ in .error(.notFound, code: 4_040_010) }
        return try await fake.run { port in
            let clients = try stores.map { store in
                try client(
                    port: port,
                    quota: shared
                        ? store.sharedLimits.map { SharedAppStoreQuota(.init(productionPerSecond: Self.rate), store: FleetRateLimits($0)) } : nil
                )
            }
            let start = ContinuousClock.now
            let failed = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<30 {
                    let client = clients[index % 3]
                    group.addTask {
                        do throws(AppStoreServerAPIError) {
                            _ = try await client.subscriptionStatuses(forTransaction: "\(2_000_000_000_000_000 + index)")
                            return false
                        } catch {
                            return error.code != .notFound
                        }
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            // Every call has ended, so every request it sent was recorded (the fake records before it answers).
            return (await fake.ledger.arrivals.map { $0 - start }, failed)
        }
    }

    @Test func threeReplicasShareApplesQuota() async throws {
        try await SharedLimitTests.withReplicas { stores in
            let alone = try await requestsApple(shared: false, stores: stores)
            #expect(alone.arrivals.count == 30 && alone.failed == 0, "each client alone sends its own 10: \(alone)")
            let shared = try await requestsApple(shared: true, stores: stores)
            // Every request waits for the fleet's token within its budget: none is refused, all reach Apple.
            #expect(shared.arrivals.count == 30 && shared.failed == 0, "\(shared.failed) failed, \(shared.arrivals.count) of 30 reached Apple")
            // The k-th request to reach Apple had its token from the fleet's bucket (a lease never owes): by then the
            // bucket had given at most its burst and what it refilled since the test started, give or take a token
            // for the database's clock. A machine that runs late only moves arrivals later, within the bound.
            let sorted = shared.arrivals.sorted()
            let over = sorted.enumerated().first { index, arrival in
                Double(index + 1) > Self.rate + Self.rate * (Double(arrival.components.seconds) + Double(arrival.components.attoseconds) / 1e18) + 1
            }
            let late = over.map { "request \($0.offset + 1) reached Apple \($0.element) after the start" } ?? ""
            #expect(over == nil, "\(late), over the fleet's quota of 10 a second")
        }
    }
}
