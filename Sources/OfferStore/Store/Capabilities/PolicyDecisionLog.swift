import Foundation
import OfferModel

/// The decision log (docs/store.md "The decision log"): every policy decision, written in batches, read by
/// dry-runs and the console.
public protocol PolicyDecisionLog: Sendable {
    /// Adds a decision to the decision log through a batched writer (one transaction a batch), without waiting:
    /// the answer never waits for it. A batch that fails is written again for a few seconds, then logged, counted
    /// (`offer_signer_decision_log_dropped_total`) and lost (docs/store.md "The decision log").
    func logDecision(_ decision: PolicyDecisionRecord)

    /// Returns once every decision logged so far is written (or has failed).
    func flushDecisionLog() async

    /// The logged decisions about the apps `bundleIdentifiers` with `since <= decidedAt < until` (Unix ms), oldest
    /// first, after `cursor`, at most `limit` (1 to 10,000), each with its facts snapshot when its row keeps it
    /// (``PolicyDecisionRecord/factsSnapshot``; empty for a decision written before schema version 24, whose snapshot
    /// is read by its hash, ``decisionSnapshots(hashes:)``).
    func policyDecisions(
        bundleIdentifiers: [String],
        since: Int64,
        until: Int64,
        after cursor: PolicyDecisionCursor?,
        limit: Int
    ) async throws -> [PolicyDecisionRecord]

    /// The facts snapshots with these hashes (at most 10,000), by hash, as the decisions written before schema version 24
    /// keep them (`decision_facts`).
    func decisionSnapshots(hashes: [String]) async throws -> [String: String]

    /// The logged decisions about one customer of an app (by the log's keyed hash, ``PolicyDecisionRecord/customerHash``)
    /// made since `since` (Unix ms), newest first, at most `limit` (1 to 1,000), without their snapshots. The log has
    /// no index on the customer: the window bounds what is read.
    func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord]

    /// Deletes the decisions made before `before` and the snapshots no later decision uses.
    /// - Returns: how many decisions went.
    func purgeDecisionLog(before: Date) async throws -> Int
}

extension PolicyDecisionLog {
    /// A store without a decision log keeps nothing.
    public func logDecision(_ decision: PolicyDecisionRecord) {}
    public func flushDecisionLog() async {}
    public func policyDecisions(
        bundleIdentifiers: [String],
        since: Int64,
        until: Int64,
        after cursor: PolicyDecisionCursor?,
        limit: Int
    ) async throws -> [PolicyDecisionRecord] { [] }
    public func purgeDecisionLog(before: Date) async throws -> Int { 0 }
    public func decisionSnapshots(hashes: [String]) async throws -> [String: String] { [:] }
    public func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord] {
        []
    }
}
