public import AppStoreNotifications

/// One subscription's latest transaction from Get All Subscription Statuses, verified.
public struct VerifiedLastTransaction: Sendable, Hashable {
    /// The subscription group, as the answer names it.
    public var subscriptionGroupIdentifier: String?

    /// The subscription's status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked).
    public var status: SubscriptionStatus?

    /// The verified `signedTransactionInfo`.
    public var transaction: JWSTransactionDecodedPayload

    /// The verified `signedRenewalInfo`, if the App Store sent one.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?

    /// Creates an item.
    public init(
        subscriptionGroupIdentifier: String?,
        status: SubscriptionStatus?,
        transaction: JWSTransactionDecodedPayload,
        renewalInfo: JWSRenewalInfoDecodedPayload?
    ) {
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.status = status
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }
}

/// The answer of Get All Subscription Statuses, every signed item verified.
public struct SubscriptionStatuses: Sendable, Hashable {
    /// The environment that answered.
    public var environment: AppStoreEnvironment

    /// The latest transaction of each subscription of the customer, in every group.
    public var lastTransactions: [VerifiedLastTransaction]

    /// Creates an answer.
    public init(environment: AppStoreEnvironment, lastTransactions: [VerifiedLastTransaction]) {
        self.environment = environment
        self.lastTransactions = lastTransactions
    }
}

/// The auto-renewable transactions of Get Transaction History (v2), every page read and verified.
public struct TransactionHistory: Sendable, Hashable {
    /// The environment that answered.
    public var environment: AppStoreEnvironment

    /// The verified transactions, one per `transactionId` (the most recently signed when a page repeats one), in
    /// the order the App Store sent them (oldest change first).
    public var transactions: [JWSTransactionDecodedPayload]

    /// `false` when the page limit stopped the reading while the App Store had more.
    public var isComplete: Bool

    /// Creates an answer.
    public init(environment: AppStoreEnvironment, transactions: [JWSTransactionDecodedPayload], isComplete: Bool) {
        self.environment = environment
        self.transactions = transactions
        self.isComplete = isComplete
    }
}
