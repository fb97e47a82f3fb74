import Foundation

/// How long to wait before the next attempt.
enum RetryTiming {
    /// Exponential backoff with full jitter: a random wait between zero and `initial · 2^(retry − 1)`, capped.
    ///
    /// - Parameters:
    ///   - retry: 1 for the first retry.
    ///   - policy: The configured backoff.
    static func backoff(retry: Int, policy: AppStoreServerAPIConfiguration.RetryPolicy) -> Duration {
        let exponent = min(max(retry - 1, 0), 20)
        let ceiling = min(policy.initialBackoff.timeInterval * Double(1 << exponent), policy.maximumBackoff.timeInterval)
        guard ceiling.isFinite, ceiling > 0 else { return .zero }
        return .seconds(Double.random(in: 0...ceiling))
    }

    /// The wait a `Retry-After` header asks for, or `nil` if it is missing or unreadable.
    ///
    /// Apple documents the value as a UNIX time in **milliseconds**; RFC 9110 defines it as delay-seconds (or an
    /// HTTP date). Both numeric forms are read: a number of 10¹² or more is UNIX milliseconds, one of 10⁹ or more
    /// UNIX seconds, anything smaller a delay in seconds. A time in the past is no wait; the caller bounds the rest.
    ///
    /// - Parameters:
    ///   - value: The header's value.
    ///   - now: The current time.
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 20, let number = Int64(trimmed), number >= 0 else { return nil }
        let seconds: Double
        if number >= 1_000_000_000_000 {
            seconds = Double(number) / 1000 - now.timeIntervalSince1970
        } else if number >= 1_000_000_000 {
            seconds = Double(number) - now.timeIntervalSince1970
        } else {
            seconds = Double(number)
        }
        guard seconds.isFinite else { return nil }
        return .seconds(min(max(seconds, 0), 86_400 * 365))
    }
}
