import Foundation

/// The range of timestamps the service does arithmetic on, and the checked conversions into it.
///
/// Every timestamp that arrives from the network (a legacy bundle's `timestamp`, a JWS's `iat`) is checked
/// against these bounds before it is multiplied, subtracted or converted, so that no value can trap.
public enum OfferTimestamp {
    /// Unix milliseconds from 1970-01-01T00:00:00Z up to 9999-12-31T23:59:59.999Z.
    public static let millisecondRange: ClosedRange<Int64> = 0...253_402_300_799_999

    /// Unix seconds over the same span (a JWS `iat`).
    public static let secondRange: ClosedRange<Double> = 0...253_402_300_799

    /// `seconds` (a JWS `iat`) in milliseconds, or `nil` when it is not a whole number inside ``secondRange``.
    public static func milliseconds(fromSeconds seconds: Double) -> Int64? {
        guard seconds.isFinite, secondRange.contains(seconds), seconds == seconds.rounded(.down) else { return nil }
        return Int64(seconds) * 1000
    }

    /// Whether a bundle with `timestamp` is `current`, `expired` or `future` at `now`, without overflow for
    /// any `Int64`.
    public static func window(of timestamp: Int64, now: Date) -> String {
        let current = OfferSigner.currentTimestamp(now)
        let (ahead, overflow) = timestamp.subtractingReportingOverflow(current)
        if overflow { return timestamp > current ? "future" : "expired" }
        if ahead > 5 * 60 * 1000 { return "future" }
        if ahead < -LegacyOfferVerifier.validityMilliseconds { return "expired" }
        return "current"
    }
}
