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
        // Digits with at most one decimal point (some servers write "1.5"); no sign, exponent, hex, inf or nan.
        guard !trimmed.isEmpty, trimmed.utf8.count <= 24,
            trimmed.utf8.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }),
            trimmed.utf8.filter({ $0 == UInt8(ascii: ".") }).count <= 1,
            let number = Double(trimmed), number.isFinite
        else { return nil }
        let seconds: Double
        if number >= 1_000_000_000_000 {
            seconds = number / 1000 - now.timeIntervalSince1970
        } else if number >= 1_000_000_000 {
            seconds = number - now.timeIntervalSince1970
        } else {
            seconds = number
        }
        guard seconds.isFinite else { return nil }
        return .seconds(min(max(seconds, 0), 86_400 * 365))
    }
}
