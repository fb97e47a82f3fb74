import Foundation

/// What became of one customer's offers (the console's customer page): the redemptions recorded for them or for
/// their original transactions, and the retention answers given about those transactions.
public struct CustomerOutcomes: Sendable, Hashable {
    /// A redemption with what followed it.
    public struct RedemptionHistory: Sendable, Hashable {
        /// The redemption as recorded.
        public var redemption: Redemption
        /// The channel of the signature it was attributed to (`app`, `retention`), or `nil` when none.
        public var signatureChannel: String?
        /// When that signature was issued, Unix milliseconds.
        public var signatureTimestamp: Int64?
        /// The first renewal at full price after it, Unix milliseconds.
        public var renewedAt: Int64?
        /// When its transaction was refunded, Unix milliseconds.
        public var refundedAt: Int64?
        /// When the subscription expired after it, Unix milliseconds.
        public var expiredAt: Int64?

        /// Creates a history.
        public init(
            redemption: Redemption,
            signatureChannel: String? = nil,
            signatureTimestamp: Int64? = nil,
            renewedAt: Int64? = nil,
            refundedAt: Int64? = nil,
            expiredAt: Int64? = nil
        ) {
            self.redemption = redemption
            self.signatureChannel = signatureChannel
            self.signatureTimestamp = signatureTimestamp
            self.renewedAt = renewedAt
            self.refundedAt = refundedAt
            self.expiredAt = expiredAt
        }
    }

    /// A retention answer and whether the customer stayed.
    public struct RetentionHistory: Sendable, Hashable {
        /// The answer as recorded.
        public var answer: RetentionAnswerRecord
        /// When a renewal or auto-renew turned back on saved it, Unix milliseconds.
        public var savedAt: Int64?

        /// Creates a history.
        public init(answer: RetentionAnswerRecord, savedAt: Int64? = nil) {
            self.answer = answer
            self.savedAt = savedAt
        }
    }

    /// Newest first.
    public var redemptions: [RedemptionHistory]
    /// Newest first.
    public var retentionAnswers: [RetentionHistory]

    /// Creates outcomes.
    public init(redemptions: [RedemptionHistory] = [], retentionAnswers: [RetentionHistory] = []) {
        self.redemptions = redemptions
        self.retentionAnswers = retentionAnswers
    }
}
