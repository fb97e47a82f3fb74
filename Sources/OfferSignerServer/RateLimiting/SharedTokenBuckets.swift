import Crypto
import Foundation
import OfferApplication
import OfferModel
import OfferSigning
import Synchronization

/// Takes a token for a key: one replica's own buckets (``TokenBuckets``) or the fleet's (``SharedTokenBuckets``).
public protocol LimitBuckets: Sendable {
    /// Decides at once (a caller that cannot wait: the event-loop signing path).
    func take(_ key: String, now: ContinuousClock.Instant) -> TokenBuckets.Decision
    /// Decides, waiting for the store where the fleet's buckets need it (a lease, a few milliseconds).
    func take(_ key: String) async -> TokenBuckets.Decision
}

extension TokenBuckets: LimitBuckets {
    public func take(_ key: String) async -> Decision { take(key, now: .now) }
}

/// Token buckets every replica on a PostgreSQL store shares (docs/operations.md "Rate limits"): each replica
/// leases a few tokens of a bucket at a time (``SharedBucketLedger``), spends them locally and gives back what it
/// has not spent after a second unused; leases asked for together go in one statement. A request costs no round
/// trip unless its replica has no token of the bucket left: then it waits for one lease (or, on the event-loop
/// path, which cannot wait, is allowed on credit for a bucket's first takes, else refused for a second).
///
/// Buckets are named by the SHA-256 of their kind and key (never a customer identifier or a credential). When the
/// store does not answer, each replica decides alone for ``outageSeconds`` with buckets of the full limit (today's
/// per-replica limit: limited, never open), then tries the store again.
public final class SharedTokenBuckets: LimitBuckets {
    private struct State: Sendable {
        var ledger: SharedBucketLedger
        var flushing = false
        var sweeping = false
        var waiters: [String: [CheckedContinuation<Void, Never>]] = [:]
        var failingUntil: ContinuousClock.Instant?
        var lastPurge: ContinuousClock.Instant?
    }

    /// The bucket's kind, part of its name in the store (`client`, `customer`, `admin-failures`).
    public let kind: String
    public let rate: Double
    public let burst: Double
    /// How long a replica decides alone after the store failed to answer a lease.
    public static let outageSeconds = 5.0
    /// How many leases a caller that can wait waits for at most before it is refused for a second.
    static let waitingAttempts = 16
    private let store: FleetRateLimits
    private let fallback: TokenBuckets
    private let state: Mutex<State>

    /// - Parameters: `rate` tokens a second (> 0), `burst` (≥ 1), for every bucket of `kind` on `store`.
    public init(kind: String, rate: Double, burst: Double, store: FleetRateLimits) {
        self.kind = kind
        self.rate = max(rate, .leastNormalMagnitude)
        self.burst = max(burst, 1)
        self.store = store
        fallback = TokenBuckets(rate: rate, burst: burst)
        state = Mutex(State(ledger: SharedBucketLedger(rate: rate, burst: burst)))
    }

    /// Keys of clients whose address is not known (no socket address): every such client would be one bucket for
    /// the whole fleet, so each replica limits them alone.
    static let unknownAddresses: Set<String> = ["unknown", "open:unknown"]

    public func take(_ key: String, now: ContinuousClock.Instant) -> TokenBuckets.Decision {
        if Self.unknownAddresses.contains(key) { return fallback.take(key, now: now) }
        switch decide(bucket(key), now: now, waiting: false) {
        case .allowed: return .allowed
        case .limited(let seconds): return .limited(retryAfterSeconds: seconds)
        case .ask: return .limited(retryAfterSeconds: 1)
        }
    }

    public func take(_ key: String) async -> TokenBuckets.Decision {
        if Self.unknownAddresses.contains(key) { return fallback.take(key, now: .now) }
        let name = bucket(key)
        // Each lease answered either brings tokens or finds the bucket empty (then `limited`): a caller asks again
        // while its replica's share runs out under others waiting with it, at most ``waitingAttempts`` times.
        for _ in 0..<Self.waitingAttempts {
            switch decide(name, now: .now, waiting: true) {
            case .allowed: return .allowed
            case .limited(let seconds): return .limited(retryAfterSeconds: seconds)
            case .ask: await leaseAnswered(name)
            }
        }
        return .limited(retryAfterSeconds: 1)
    }

    /// The bucket's name in the store.
    func bucket(_ key: String) -> String {
        let digest = SHA256.hash(data: Data("offer-signer rate limit\u{0}\(kind)\u{0}\(key)".utf8))
        return kind + ":" + digest.withUnsafeBytes { $0.hexString() }
    }

    private enum Start { case none, flush, sweep, both }

    private func decide(_ name: String, now: ContinuousClock.Instant, waiting: Bool) -> SharedBucketLedger.Decision {
        let (decision, start) = state.withLock { state -> (SharedBucketLedger.Decision?, Start) in
            if let until = state.failingUntil, until > now { return (nil, .none) }
            state.failingUntil = nil
            let decision = state.ledger.take(name, now: now, waiting: waiting)
            if decision == .ask, state.ledger.entries[name] == nil { return (nil, .none) }  // beyond the keys tracked
            let flush = !state.flushing && state.ledger.hasQueued
            let sweep = !state.sweeping
            if flush { state.flushing = true }
            if sweep { state.sweeping = true }
            return (decision, flush ? (sweep ? .both : .flush) : (sweep ? .sweep : .none))
        }
        if start == .flush || start == .both { Task { await self.flush() } }
        if start == .sweep || start == .both { Task { await self.sweep() } }
        guard let decision else {
            switch fallback.take(name, now: now) {
            case .allowed: return .allowed
            case .limited(let seconds): return .limited(retryAfterSeconds: seconds)
            }
        }
        return decision
    }

    /// Returns when the lease out for `name` has answered (at once when none is).
    private func leaseAnswered(_ name: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiting = state.withLock { state in
                guard state.ledger.entries[name]?.leasing == true else { return false }
                state.waiters[name, default: []].append(continuation)
                return true
            }
            if !waiting { continuation.resume() }
        }
    }

    /// Sends the queued leases, one statement a batch, until none is queued.
    private func flush() async {
        while true {
            let leases = state.withLock { state in
                let leases = state.ledger.leases()
                if leases.isEmpty { state.flushing = false }
                return leases
            }
            guard !leases.isEmpty else { return }
            let grants: [SharedLimitGrant]?
            do {
                grants = try await store.lease(leases.map { SharedLimitLease(bucket: $0.bucket, rate: rate, burst: burst, wanted: $0.wanted) })
            } catch {
                grants = nil
            }
            let now = ContinuousClock.now
            let waiters = state.withLock { state in
                if let grants, grants.count == leases.count {
                    for (lease, grant) in zip(leases, grants) {
                        state.ledger.granted(lease.bucket, grant.granted, secondsToNextToken: grant.secondsToNextToken, now: now)
                    }
                } else {
                    state.ledger.failed(leases.map(\.bucket))
                    state.failingUntil = now + .seconds(Self.outageSeconds)
                }
                return leases.flatMap { state.waiters.removeValue(forKey: $0.bucket) ?? [] }
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Every half second while buckets are tracked: gives back what was not spent, forgets idle buckets, and once a
    /// minute purges the store's full buckets.
    private func sweep() async {
        while true {
            try? await Task.sleep(for: .milliseconds(500))
            let now = ContinuousClock.now
            let (returned, purge, done) = state.withLock { state in
                let returned = state.ledger.sweep(now: now)
                let purge = state.lastPurge.map { now - $0 >= .seconds(60) } ?? true
                if purge { state.lastPurge = now }
                let done = state.ledger.entries.isEmpty
                if done { state.sweeping = false }
                return (returned, purge, done)
            }
            if !returned.isEmpty { try? await store.giveBack(returned) }
            if purge { try? await store.purgeFullBuckets() }
            if done { return }
        }
    }
}
