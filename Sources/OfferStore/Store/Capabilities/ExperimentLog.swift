import Foundation
import OfferModel

/// Offer experiments: exposures, the subscription transactions their metrics read, and their outcomes.
public protocol ExperimentLog: Sendable {
    /// Records a customer's exposure to an experiment unless one is recorded already (the first wins).
    /// - Returns: whether this call recorded it.
    @discardableResult
    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool

    /// The customers exposed to an experiment, by variant name.
    func exposureCounts(experimentIdentifier: String) async throws -> [String: Int]

    /// Each variant's exposed customers and, of those whose window is mature, what they did within it: redeemed one
    /// of the variant's offers (and renewed after it), converted, retained, realized revenue (docs/experiments.md).
    func experimentOutcomes(_ query: ExperimentOutcomeQuery) async throws -> [String: ExperimentVariantOutcome]

    /// Records a subscription's transaction, offer or not (an experiment's metrics read them); a transaction
    /// recorded before gains what is new (its refund), nothing else changes.
    func recordTransaction(_ transaction: SubscriptionTransaction) async throws

    /// Deletes the subscription transactions purchased before `purchasedBefore` (what experiment reports read,
    /// kept for the longest window after the oldest exposure a report still needs; docs/experiments.md).
    /// - Returns: how many went.
    func purgeSubscriptionTransactions(purchasedBefore: Date) async throws -> Int
}
