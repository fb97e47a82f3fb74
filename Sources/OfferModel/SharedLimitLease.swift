import Foundation

/// Tokens asked for from one bucket, with the bucket's rate (its creator's; every replica is configured alike).
public struct SharedLimitLease: Sendable, Hashable {
    /// The bucket's name (a hash: never a raw identifier).
    public var bucket: String
    /// Tokens added per second (> 0).
    public var rate: Double
    /// The most tokens the bucket holds (≥ 1).
    public var burst: Double
    /// Tokens wanted (≥ 1).
    public var wanted: Int

    public init(bucket: String, rate: Double, burst: Double, wanted: Int) {
        self.bucket = bucket
        self.rate = rate
        self.burst = burst
        self.wanted = wanted
    }
}

/// What a lease got.
public struct SharedLimitGrant: Sendable, Hashable {
    /// Tokens granted (0 ... wanted).
    public var granted: Int
    /// Seconds until the bucket holds one whole token again (0 when it holds one now).
    public var secondsToNextToken: Double

    public init(granted: Int, secondsToNextToken: Double) {
        self.granted = granted
        self.secondsToNextToken = secondsToNextToken
    }
}
