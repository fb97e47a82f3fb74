import Foundation
import Logging
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
                    #expect(error.code == "rate_limited")
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
                    kind: "admin-failures", rate: 1 / AdminAuthenticationMiddleware.secondsPerFailure,
                    burst: AdminAuthenticationMiddleware.failureBurst, store: try #require(store.sharedLimits))
            }
            let address = "192.0.2.\(Int.random(in: 1...254))-\(UUID().uuidString)"
            let start = ContinuousClock.now
            var allowed = 0
            for attempt in 0..<60 {
                if await failures[attempt % 3].take(address) == .allowed { allowed += 1 }
            }
            let refilled = Int((ContinuousClock.now - start) / .seconds(AdminAuthenticationMiddleware.secondsPerFailure))
            #expect((10...(11 + refilled)).contains(allowed), "allowed \(allowed) of 60 failures, limit 10 and one per 6 s")
        }
    }

    @Test func tokensNotSpentGoBackToTheFleet() async throws {
        try await Self.withReplicas { stores in
            let shared = try stores.map { try #require($0.sharedLimits) }
            let first = SharedTokenBuckets(kind: "client", rate: 100.0 / 3_600, burst: 100, store: shared[0])
            let key = "key:returned-\(UUID().uuidString)"
            #expect(await first.take(key) == .allowed)   // leases a chunk (5) beyond the one spent
            try await Task.sleep(for: .milliseconds(2_500))   // unused for a second: given back
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
        var ledger = SharedBucketLedger(rate: 1, burst: 100)   // chunk 5
        let now = ContinuousClock.now
        #expect(ledger.take("a", now: now) == .allowed)
        #expect(ledger.take("a", now: now) == .allowed)
        #expect(ledger.leases().map(\.wanted) == [7])   // the chunk and the two owed
        ledger.granted("a", 7, secondsToNextToken: 0, now: now)
        #expect(ledger.entries["a"]?.tokens == 5)
    }

    @Test func aBucketFoundEmptyIsRememberedAndOwesNothing() {
        var ledger = SharedBucketLedger(rate: 0.5, burst: 10)   // chunk 2, fills in 20 s
        let now = ContinuousClock.now
        #expect(ledger.take("a", now: now) == .allowed)
        _ = ledger.leases()
        ledger.granted("a", 0, secondsToNextToken: 1.5, now: now)
        #expect(ledger.take("a", now: now) == .limited(retryAfterSeconds: 2))
        #expect(ledger.sweep(now: now + .seconds(5)).isEmpty)
        #expect(ledger.entries["a"] != nil, "kept until the bucket would be full again")
        #expect(ledger.take("a", now: now + .seconds(5)) == .ask)   // no debt: a lease first
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
