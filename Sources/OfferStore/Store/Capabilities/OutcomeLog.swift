import Foundation
import OfferModel

/// What became of the offers: redemptions, subscription events and retention answers as they are recorded.
public protocol OutcomeLog: Sendable {
    /// Records a transaction that carried an offer, once per (environment, transaction identifier), attributed to
    /// the latest signature this service issued for it before the purchase, if any (docs/outcomes.md), with what
    /// the subscription events already recorded say became of it.
    func recordRedemption(_ redemption: Redemption) async throws -> RedemptionRecording

    /// Records something that happened to a subscription (once) and applies it to the redemptions and retention
    /// answers recorded before it. - Returns: how many of those changed.
    @discardableResult
    func recordSubscriptionEvent(_ event: SubscriptionEvent) async throws -> Int

    /// Records a retention answer, once per app and `requestIdentifier`, saved at once if an event already says so.
    func recordRetentionAnswer(_ answer: RetentionAnswerRecord) async throws

    /// Deletes subscription events recorded before `recordedBefore` (they matter only until the notifications
    /// they follow have arrived). - Returns: how many went.
    func purgeSubscriptionEvents(recordedBefore: Date) async throws -> Int

    /// The redemptions filed under a customer or about one of `originalTransactionIds` (at most 100 are read), and
    /// the retention answers given about those transactions, newest first, at most `limit` (1 to 1,000) of each.
    func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes
}

extension OutcomeLog {
    /// A store without outcomes knows none.
    public func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes {
        CustomerOutcomes()
    }
}
