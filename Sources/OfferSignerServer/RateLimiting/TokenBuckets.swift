import Foundation
import Synchronization

/// Token buckets by key (a credential, a customer, a client address): `rate` tokens a second, at most
/// `burst` saved up. Thread-safe; the number of keys tracked is bounded (full buckets are forgotten first,
/// since forgetting a full bucket changes nothing).
public final class TokenBuckets: Sendable {
    /// What ``take(_:now:)`` decided.
    public enum Decision: Sendable, Hashable {
        case allowed
        /// Over the limit; a token is available again after this many whole seconds (at least 1).
        case limited(retryAfterSeconds: Int)
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// Tokens added per second.
    public let rate: Double
    /// The most tokens a bucket holds.
    public let burst: Double
    private let maximumKeys: Int
    private let buckets = Mutex<[String: Bucket]>([:])

    /// Creates buckets.
    /// - Parameters:
    ///   - rate: tokens per second (> 0).
    ///   - burst: bucket size (≥ 1).
    ///   - maximumKeys: how many keys are tracked at most.
    public init(rate: Double, burst: Double, maximumKeys: Int = 100_000) {
        self.rate = max(rate, .leastNormalMagnitude)
        self.burst = max(burst, 1)
        self.maximumKeys = max(maximumKeys, 1)
    }

    /// How many keys are tracked now.
    public var trackedKeys: Int { buckets.withLock { $0.count } }

    /// Takes one token from `key`'s bucket.
    public func take(_ key: String, now: ContinuousClock.Instant = .now) -> Decision {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, Double((now - bucket.updated).components.seconds) + Double((now - bucket.updated).components.attoseconds) / 1e18)
            bucket.tokens = min(burst, bucket.tokens + elapsed * rate)
            bucket.updated = now
            let decision: Decision
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                decision = .allowed
            } else {
                let wait = (1 - bucket.tokens) / rate
                decision = .limited(retryAfterSeconds: Int(min(max(wait.rounded(.up), 1), 86_400)))
            }
            if buckets[key] == nil, buckets.count >= maximumKeys { Self.evict(&buckets, now: now, rate: rate, burst: burst) }
            buckets[key] = bucket
            return decision
        }
    }

    private static func evict(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, rate: Double, burst: Double) {
        let full = buckets.filter { _, bucket in
            let elapsed = Double((now - bucket.updated).components.seconds)
            return bucket.tokens + elapsed * rate >= burst
        }
        if full.isEmpty {
            if let oldest = buckets.min(by: { $0.value.updated < $1.value.updated }) { buckets[oldest.key] = nil }
        } else {
            for key in full.keys { buckets[key] = nil }
        }
    }
}
