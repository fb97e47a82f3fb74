public import AppStoreNotifications
public import Foundation
public import OfferModel

/// What the App Store Server API says about a customer, verified, and folded into customer facts with the same
/// ``SubscriptionFolding`` that folds notifications.
///
/// ## Usage
///
/// ```swift
/// let fetched = try await client.facts(forTransaction: originalTransactionId)
/// var facts = try await store.facts(for: key) ?? CustomerFacts(key: key)
/// if fetched.fold(into: &facts) { try await store.save(facts) }
/// ```
public struct FetchedSubscriptionFacts: Sendable, Hashable {
    /// The environment that knew the transaction.
    public var environment: AppStoreEnvironment

    /// The verified statuses: the latest transaction and renewal info of each subscription.
    public var statuses: SubscriptionStatuses

    /// The verified transaction history, if it was asked for.
    public var history: TransactionHistory?

    /// When the answer was fetched; expiry without a status is judged at this time.
    public var fetchedAt: Date

    /// Creates fetched facts.
    public init(statuses: SubscriptionStatuses, history: TransactionHistory?, fetchedAt: Date = Date()) {
        self.environment = statuses.environment
        self.statuses = statuses
        self.history = history
        self.fetchedAt = fetchedAt
    }

    /// Folds the answer into `facts`: each subscription's status, transaction and renewal info first (the state),
    /// then the history (introductory offer used, first purchase, renewals). Data older than what `facts` already
    /// holds does not move it back.
    ///
    /// - Parameter facts: The customer's facts, e.g. as loaded from the store, or new ones.
    /// - Returns: Whether the facts changed.
    @discardableResult
    public func fold(into facts: inout CustomerFacts) -> Bool {
        var changed = false
        for item in statuses.lastTransactions {
            changed =
                SubscriptionFolding.fold(
                    status: item.status,
                    transaction: item.transaction,
                    renewalInfo: item.renewalInfo,
                    into: &facts,
                    now: fetchedAt
                ) || changed
        }
        if let history {
            changed = SubscriptionFolding.fold(history: history.transactions, into: &facts, now: fetchedAt) || changed
        }
        return changed
    }

    /// New facts for `key` with this answer folded in: the facts of a customer the store has never seen.
    ///
    /// - Parameter key: The customer.
    /// - Returns: The facts.
    public func facts(for key: CustomerKey) -> CustomerFacts {
        var facts = CustomerFacts(key: key, updatedAt: fetchedAt)
        fold(into: &facts)
        return facts
    }
}
