public import Foundation

extension Date {
    /// Creates a date from an App Store timestamp: UNIX time in milliseconds, as in every signed payload.
    ///
    /// - Parameter milliseconds: Milliseconds since 1970-01-01T00:00:00Z, e.g. ``JWSTransactionDecodedPayload/expiresDate``.
    public init(appStoreMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This date as an App Store timestamp: UNIX time in whole milliseconds (rounded down).
    public var appStoreMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}
