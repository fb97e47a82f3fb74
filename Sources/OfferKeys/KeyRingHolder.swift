import OfferSigning
import Synchronization

/// Holds the current ``KeyRing``. A reload swaps the whole ring under a lock; a request takes one snapshot
/// and uses it throughout, so it never sees half of a key set. No actor hop on the signing path.
public final class KeyRingHolder: Sendable {
    private let ring: Mutex<KeyRing>

    /// Creates a holder with an initial ring.
    public init(_ ring: KeyRing) {
        self.ring = Mutex(ring)
    }

    /// The current ring.
    public var current: KeyRing {
        ring.withLock { $0 }
    }

    /// Replaces the ring.
    public func replace(with newRing: KeyRing) {
        ring.withLock { $0 = newRing }
    }
}
