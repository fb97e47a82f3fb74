import OfferSignerServer
import Testing

@Suite struct TokenBucketTests {
    @Test func aBucketAllowsItsBurstThenRefillsAtItsRate() {
        let buckets = TokenBuckets(rate: 2, burst: 3)
        let start = ContinuousClock.now
        #expect((0..<3).map { _ in buckets.take("a", now: start) } == [.allowed, .allowed, .allowed])
        #expect(buckets.take("a", now: start) == .limited(retryAfterSeconds: 1))
        #expect(buckets.take("a", now: start + .milliseconds(500)) == .allowed)
        #expect(buckets.take("a", now: start + .milliseconds(500)) == .limited(retryAfterSeconds: 1))
    }

    @Test func oneKeyOverItsLimitDoesNotSlowAnother() {
        let buckets = TokenBuckets(rate: 1.0 / 60, burst: 1)
        let now = ContinuousClock.now
        #expect(buckets.take("a", now: now) == .allowed)
        #expect(buckets.take("a", now: now) == .limited(retryAfterSeconds: 60))
        #expect(buckets.take("b", now: now) == .allowed)
    }

    @Test func theNumberOfKeysIsBounded() {
        let buckets = TokenBuckets(rate: 1, burst: 1, maximumKeys: 10)
        let now = ContinuousClock.now
        for key in 0..<1_000 { _ = buckets.take("k\(key)", now: now) }
        #expect(buckets.trackedKeys <= 10)
    }
}
