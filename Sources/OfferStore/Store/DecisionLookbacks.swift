/// How far back one kind of logged decision kept the issued signatures it was made on: the least of a window's
/// decisions on one channel about one offer (``DecisionLookbackSummary``).
public struct DecisionLookback: Sendable, Hashable {
    /// `legacy`, `jws`, `introductory` or `retention`.
    public var channel: String
    /// The app.
    public var bundleIdentifier: String
    /// The product.
    public var productIdentifier: String
    /// The offer (``PolicyDecisionRecord/offerIdentifier``).
    public var offerIdentifier: String
    /// The shortest lookback, in seconds, that any of these decisions kept (``PolicyDecisionRecord/lookbackSeconds``).
    public var leastLookbackSeconds: Int64

    public init(channel: String, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, leastLookbackSeconds: Int64) {
        self.channel = channel
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.leastLookbackSeconds = leastLookbackSeconds
    }
}

/// A store whose decision log can say in one statement how far back a window's decisions kept issued signatures,
/// without reading them one by one: a dry-run refuses a candidate that looks back further before it replays
/// anything (docs/policy.md "Dry-run"). The SQL stores are; a store that is not leaves the check to the replay.
public protocol DecisionLookbackSummary: PolicyDecisionLog {
    /// The decisions about the apps `bundleIdentifiers` with `since <= decidedAt < until` (Unix ms) that kept less
    /// than `below` seconds of issued signatures, grouped by channel, app, product and offer, each group with the
    /// least it kept.
    func decisionLookbacks(bundleIdentifiers: [String], since: Int64, until: Int64, below: Int64) async throws -> [DecisionLookback]
}
