import Foundation
import Synchronization

/// One decision made under a policy, as the decision log keeps it (schema version 9, docs/policy.md "Dry-run"):
/// when, on which channel, about which offer, for which customer (the log's keyed hash, never the identifier),
/// under which policy version, on what facts, and the answer with its reason codes.
///
/// The facts are a snapshot (``factsSnapshot``, compact JSON written by the application) kept in the decision's own
/// row (schema version 24; before it, once per distinct content in `decision_facts`, named by ``factsHash``). The hash
/// still names the content: a replay decodes each distinct snapshot once.
public struct PolicyDecisionRecord: Sendable, Hashable {
    /// A random identifier, unique with ``decidedAt`` (the log's order for paging).
    public var identifier: Int64
    /// When, Unix milliseconds.
    public var decidedAt: Int64
    /// `legacy`, `jws`, `introductory` or `retention`.
    public var channel: String
    /// The app.
    public var bundleIdentifier: String
    /// The product.
    public var productIdentifier: String
    /// The offer asked for (legacy, JWS), or the offer the chosen retention entry signs; empty otherwise.
    public var offerIdentifier: String
    /// The chosen retention entry's message identifier (retention only, when an entry was chosen).
    public var retentionEntry: String?
    /// The customer as the log's keyed hash (`CustomerHash`), never the `applicationUsername`.
    public var customerHash: String
    /// The SHA-256 of the policy's text.
    public var policyVersion: String
    /// Whether the answer was yes.
    public var granted: Bool
    /// The reason codes of a no, comma-separated (`rule:code`), empty for a yes.
    public var reasons: String
    /// How far back (seconds) the issued signatures in the snapshot reach; 0 when none were read.
    public var lookbackSeconds: Int64
    /// The hash of ``factsSnapshot`` (32 hex characters).
    public var factsHash: String
    /// The facts the rules read, as compact JSON.
    public var factsSnapshot: String
    /// The running experiment the decision's slot was in (schema version 18), `nil` when none ran.
    public var experimentIdentifier: String?
    /// The variant of ``experimentIdentifier`` the customer was assigned: what a dry-run replays the experiment with.
    public var experimentVariant: String?

    /// A new random ``identifier`` (1 through `Int64.max`) made without a system call (`Int64.random` made one a
    /// decision): SplitMix64's output for a counter started at random once per process, its top bit cleared. As
    /// unlikely to repeat as a random one, within a process or across replicas.
    public static func newIdentifier() -> Int64 {
        var z = identifierStart &+ identifierCount.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        let identifier = Int64(bitPattern: z & UInt64(Int64.max))
        return identifier == 0 ? 1 : identifier
    }

    private static let identifierStart = UInt64.random(in: 0...UInt64.max)
    private static let identifierCount = Atomic<UInt64>(0)

    /// Creates a record.
    public init(
        identifier: Int64 = PolicyDecisionRecord.newIdentifier(),
        decidedAt: Int64,
        channel: String,
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        retentionEntry: String? = nil,
        customerHash: String,
        policyVersion: String,
        granted: Bool,
        reasons: String,
        lookbackSeconds: Int64,
        factsHash: String,
        factsSnapshot: String,
        experimentIdentifier: String? = nil,
        experimentVariant: String? = nil
    ) {
        self.identifier = identifier
        self.decidedAt = decidedAt
        self.channel = channel
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.retentionEntry = retentionEntry
        self.customerHash = customerHash
        self.policyVersion = policyVersion
        self.granted = granted
        self.reasons = reasons
        self.lookbackSeconds = lookbackSeconds
        self.factsHash = factsHash
        self.factsSnapshot = factsSnapshot
        self.experimentIdentifier = experimentIdentifier
        self.experimentVariant = experimentVariant
    }
}

/// Where a page of the decision log ends: the next page starts after it.
public struct PolicyDecisionCursor: Sendable, Hashable {
    public var decidedAt: Int64
    public var identifier: Int64

    public init(decidedAt: Int64, identifier: Int64) {
        self.decidedAt = decidedAt
        self.identifier = identifier
    }
}
