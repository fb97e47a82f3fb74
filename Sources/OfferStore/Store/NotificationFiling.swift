import OfferModel

/// Everything one App Store notification writes, filed together (``OfferStore/fileNotification(_:)``): its
/// `notificationUUID` recorded once, the customer's facts folded with the original transactions claimed, and what
/// it says of outcomes — its subscription transaction, the redemption of the offer it carried, the event it is.
public struct NotificationFiling: Sendable {
    /// Recorded once: when it was seen before, the facts are not folded again (``NotificationFiled/applied``).
    public var notificationUUID: String
    /// The customer the notification is filed under.
    public var customer: CustomerKey
    /// The original transactions claimed for ``customer`` (``TransactionClaim``).
    public var claims: [TransactionClaim]
    /// Folds the notification into the customer's facts; an error it throws rolls this notification back alone.
    public var fold: @Sendable (inout CustomerFacts) throws -> Void
    /// Recorded as ``OfferStore/recordTransaction(_:)`` records it, also for a notification seen before (idempotent).
    public var transaction: SubscriptionTransaction?
    /// Recorded as ``OfferStore/recordRedemption(_:)`` records it, also for a notification seen before.
    public var redemption: Redemption?
    /// Recorded as ``OfferStore/recordSubscriptionEvent(_:)`` records it, after the redemption.
    public var event: SubscriptionEvent?

    public init(
        notificationUUID: String,
        customer: CustomerKey,
        claims: [TransactionClaim],
        transaction: SubscriptionTransaction?,
        redemption: Redemption?,
        event: SubscriptionEvent?,
        fold: @escaping @Sendable (inout CustomerFacts) throws -> Void
    ) {
        self.notificationUUID = notificationUUID
        self.customer = customer
        self.claims = claims
        self.fold = fold
        self.transaction = transaction
        self.redemption = redemption
        self.event = event
    }
}

/// What ``OfferStore/fileNotification(_:)`` did.
public struct NotificationFiled: Sendable, Hashable {
    /// The `notificationUUID` was new and the facts were folded; `false`: seen before, the facts left alone.
    public var applied: Bool
    /// What became of the filing's redemption; `nil` when it carried none.
    public var redemption: RedemptionRecording?

    public init(applied: Bool, redemption: RedemptionRecording?) {
        self.applied = applied
        self.redemption = redemption
    }
}
