import Foundation
import Metrics
import OfferEligibility
import Synchronization

/// The policy a replica runs, and where it came from: an immutable value, swapped whole by ``PolicyHolder``.
public struct PolicyInForce: Sendable {
    /// The offer catalogue and eligibility policy; `nil` signs every well-formed request.
    public let policy: OfferPolicy?
    /// The revision of the store's `policy` document this is (1, 2, …); 0 when the policy is not the store's (the
    /// file of `OFFER_SIGNER_POLICY`, or none).
    public let revision: Int64

    public init(policy: OfferPolicy?, revision: Int64 = 0) {
        self.policy = policy
        self.revision = revision
    }

    /// Where the policy came from, as `/readyz` says it: `store`, `file` or `none`.
    public var source: String { revision > 0 ? "store" : policy == nil ? "none" : "file" }
}

/// Holds the policy in force. A request reads it once, under a lock held only to copy the value (no allocation, no
/// waiting on anything else); a policy applied to the fleet replaces it whole, so a request sees one policy or the
/// other, never a mixture.
public final class PolicyHolder: Sendable {
    private let state: Mutex<PolicyInForce>
    private let revisionGauge = Gauge(label: "offer_signer_policy_revision")
    /// `offer_signer_policy_version{version="<the first 12 hex digits>"}`: 1 for the version in force, 0 for those before.
    private let shown = Mutex<Gauge?>(nil)

    public init(_ initial: PolicyInForce) {
        state = Mutex(initial)
        show(initial)
    }

    /// The policy in force and its revision.
    public var current: PolicyInForce { state.withLock { $0 } }

    /// The policy in force.
    public var policy: OfferPolicy? { state.withLock { $0.policy } }

    /// Puts `next` in force when it is a later revision of the store's policy than the one in force (or the one in
    /// force is not the store's).
    /// - Returns: whether `next` is now in force.
    @discardableResult
    public func replace(with next: PolicyInForce) -> Bool {
        let replaced = state.withLock { current -> Bool in
            guard next.revision > current.revision else { return false }
            current = next
            return true
        }
        if replaced { show(next) }
        return replaced
    }

    private func show(_ inForce: PolicyInForce) {
        revisionGauge.record(inForce.revision)
        let version = inForce.policy.map { String($0.version.prefix(12)) } ?? "none"
        let gauge = Gauge(label: "offer_signer_policy_version", dimensions: [("version", version)])
        shown.withLock { previous in
            previous?.record(0)
            gauge.record(1)
            previous = gauge
        }
    }
}
