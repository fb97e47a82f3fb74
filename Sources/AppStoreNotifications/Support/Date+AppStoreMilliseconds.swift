public import Foundation

extension Date {
    /// Creates a date from an App Store timestamp: UNIX time in milliseconds, as in every signed payload.
    ///
    /// - Parameter milliseconds: Milliseconds since 1970-01-01T00:00:00Z, e.g. ``JWSTransactionDecodedPayload/expiresDate``.
    public init(appStoreMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This date as an App Store timestamp: UNIX time in whole milliseconds (rounded down).
    /// Dates beyond what an `Int64` of milliseconds holds are clamped to its bounds rather than trapping.
    public var appStoreMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite else { return milliseconds > 0 ? .max : .min }
        return Int64(exactly: milliseconds) ?? (milliseconds > 0 ? .max : .min)
    }
}
