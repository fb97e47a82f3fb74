import Metrics
import OfferSigning
import Synchronization

/// Holds the current ``KeyRing``. A reload swaps the whole ring under a lock; a request takes one snapshot
/// and uses it throughout, so it never sees half of a key set. No actor hop on the signing path.
public final class KeyRingHolder: Sendable {
    private let ring: Mutex<KeyRing>

    /// Creates a holder with an initial ring.
    public init(_ ring: KeyRing) {
        self.ring = Mutex(ring)
        Self.recordStates(of: ring)
    }

    /// The current ring.
    public var current: KeyRing {
        ring.withLock { $0 }
    }

    /// Replaces the ring.
    public func replace(with newRing: KeyRing) {
        ring.withLock { $0 = newRing }
        Self.recordStates(of: newRing)
    }

    /// `offer_signer_keys{state}`: how many keys the ring holds in each state (docs/observability.md), every state
    /// listed (0 when none), revoked keys whose files are gone included.
    private static func recordStates(of ring: KeyRing) {
        var counts = Dictionary(uniqueKeysWithValues: KeyState.allCases.map { ($0, 0) })
        var seen = Set<String>()
        for entry in ring.entries where seen.insert(entry.key.keyIdentifier).inserted {
            if let state = ring.state(of: entry.key.keyIdentifier) { counts[state, default: 0] += 1 }
        }
        counts[.revoked, default: 0] += ring.revokedKeysNotLoaded.filter { !seen.contains($0.keyIdentifier) }.count
        for (state, count) in counts {
            Gauge(label: "offer_signer_keys", dimensions: [("state", state.rawValue)]).record(count)
        }
    }
}
