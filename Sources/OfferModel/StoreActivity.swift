import Foundation

/// When the store last saw the service work, whichever replica did it: what the console's overview shows an
/// on-call engineer (docs/console.md).
public struct StoreActivity: Sendable, Equatable {
    /// The newest signature in the issued-signature log, `nil` when it holds none.
    public var lastSignature: Date?
    /// The newest App Store notification processed (its UUID recorded), `nil` when none is kept: none arrived, or the
    /// last ones are older than the store keeps processed notifications.
    public var lastNotification: Date?

    public init(lastSignature: Date?, lastNotification: Date?) {
        self.lastSignature = lastSignature
        self.lastNotification = lastNotification
    }
}
