import OfferModel

/// App Store Server Notifications filed once per `notificationUUID`.
public protocol ProcessedNotifications: Sendable {
    /// Like ``updateCustomer(_:claiming:_:)``, once per App Store `notificationUUID`: in the same transaction it
    /// records the UUID, and when the UUID was seen before it changes nothing and returns `false`.
    func applyNotification(
        notificationUUID: String,
        to key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> Bool

    /// Files one App Store notification (``NotificationFiling``): its UUID, the customer's facts and its outcomes in
    /// one transaction, durable when this returns. Notifications filed at once share a transaction (a group commit,
    /// one flush a batch), each rolled back alone when it fails.
    /// - Throws: ``OfferStoreError`` `transactionClaimed` (nothing of this notification written), `unavailable`; an
    ///   error the fold throws, unchanged.
    func fileNotification(_ filing: NotificationFiling) async throws -> NotificationFiled

    /// Records an App Store `notificationUUID` as seen without changing any customer (a notification that names
    /// no customer). - Returns: `false` when it was seen before.
    func markNotificationProcessed(notificationUUID: String) async throws -> Bool
}

extension ProcessedNotifications {
    /// ``applyNotification(notificationUUID:to:claiming:_:)`` claiming no transaction.
    public func applyNotification(
        notificationUUID: String,
        to key: CustomerKey,
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> Bool {
        try await applyNotification(notificationUUID: notificationUUID, to: key, claiming: [], body)
    }
}

extension ProcessedNotifications where Self: OutcomeLog & ExperimentLog {
    /// ``fileNotification(_:)`` as its writes one after another, each in a transaction of its own.
    public func fileNotification(_ filing: NotificationFiling) async throws -> NotificationFiled {
        let applied = try await applyNotification(
            notificationUUID: filing.notificationUUID,
            to: filing.customer,
            claiming: filing.claims,
            filing.fold
        )
        if let transaction = filing.transaction { try await recordTransaction(transaction) }
        var redemption: RedemptionRecording?
        if let recorded = filing.redemption { redemption = try await recordRedemption(recorded) }
        if let event = filing.event { try await recordSubscriptionEvent(event) }
        return NotificationFiled(applied: applied, redemption: redemption)
    }
}
