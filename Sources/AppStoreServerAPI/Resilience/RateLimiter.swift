import AppStoreNotifications

/// The client's own rate limit: a token bucket per environment and endpoint, holding a second's worth of requests.
///
/// A request reserves its slot before it waits, in one actor turn, so concurrent requests queue in order instead
/// of all waking at once. A 429's `Retry-After` pauses the bucket until then for every later request too.
actor RateLimiter {
    struct Key: Hashable {
        let environment: AppStoreEnvironment
        let endpoint: Endpoint
    }

    private struct Bucket {
        var tokens: Double
        var last: ContinuousClock.Instant
    }

    private let rate: @Sendable (AppStoreEnvironment) -> Double
    private var buckets: [Key: Bucket] = [:]

    init(_ limit: AppStoreServerAPIConfiguration.RateLimit) {
        let production = limit.productionPerSecond
        let sandbox = limit.sandboxPerSecond
        self.rate = { environment in environment == .production ? production : sandbox }
    }

    /// Reserves one request.
    ///
    /// - Returns: How long to wait before sending it, or `nil` (nothing reserved) when that wait would end after
    ///   `deadline`.
    func reserve(_ key: Key, now: ContinuousClock.Instant = .now, deadline: ContinuousClock.Instant) -> Duration? {
        let rate = self.rate(key.environment)
        guard rate.isFinite, rate > 0 else { return .zero }  // a non-positive rate turns the limit off
        var bucket = refilled(key, now: now, rate: rate)
        let readyAt = bucket.tokens >= 1 ? bucket.last : bucket.last + .seconds((1 - bucket.tokens) / rate)
        let wait = max(.zero, readyAt - now)
        guard now + wait <= deadline else {
            buckets[key] = bucket
            return nil
        }
        bucket.tokens -= 1
        buckets[key] = bucket
        return wait
    }

    /// Lets no request through before `until` (the App Store said so with `Retry-After`), then one, then the rate.
    func pause(_ key: Key, until: ContinuousClock.Instant, now: ContinuousClock.Instant = .now) {
        let rate = self.rate(key.environment)
        guard rate.isFinite, rate > 0 else { return }
        var bucket = refilled(key, now: now, rate: rate)
        if until > bucket.last { bucket.last = until }
        bucket.tokens = min(bucket.tokens, 1)  // one request at `until`, the rest at the bucket's rate after it
        buckets[key] = bucket
    }

    private func refilled(_ key: Key, now: ContinuousClock.Instant, rate: Double) -> Bucket {
        let capacity = max(1, rate)
        var bucket = buckets[key] ?? Bucket(tokens: capacity, last: now)
        if now > bucket.last {
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.last).timeInterval * rate)
            bucket.last = now
        }
        return bucket
    }
}
