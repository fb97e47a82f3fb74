import Foundation
import OfferModel

extension SubscriptionFolding {
    /// Folds one subscription's latest state as the App Store Server API's Get All Subscription Statuses reports it:
    /// a `lastTransactions` item with its verified transaction and renewal info.
    ///
    /// The item's `status` is authoritative for the state (1 active … 5 revoked); the transaction and renewal info
    /// give the product, dates, introductory offer and auto-renewal. Data older than what was folded before (by
    /// `signedDate`) is ignored, as for notifications.
    ///
    /// - Parameters:
    ///   - status: The item's `status`, if any; without one, the state follows from revocation and expiry.
    ///   - transaction: The verified `signedTransactionInfo`.
    ///   - renewalInfo: The verified `signedRenewalInfo`, if any.
    ///   - facts: The customer's facts.
    ///   - now: The time expiry is judged at when there is no `status`.
    /// - Returns: Whether the facts changed.
    @discardableResult
    public static func fold(
        status: SubscriptionStatus?,
        transaction: JWSTransactionDecodedPayload,
        renewalInfo: JWSRenewalInfoDecodedPayload?,
        into facts: inout CustomerFacts,
        now: Date = Date()
    ) -> Bool {
        guard var subscription = current(for: transaction, in: facts) else { return false }
        let signedDates = [transaction.signedDate, renewalInfo?.signedDate].compactMap { $0 }
        let signedDate = signedDates.max().map { Date(appStoreMilliseconds: $0) }
        if let last = subscription.lastSignedDate, let signedDate, signedDate < last { return false }
        apply(transaction: transaction, renewalInfo: renewalInfo, to: &subscription)
        if let status, let state = state(of: status) {
            subscription.state = state
        } else if transaction.revocationDate != nil {
            subscription.state = .revoked
        } else if let expires = subscription.expiresDate, renewalInfo?.isInBillingRetryPeriod != true {
            subscription.state = expires > now ? .active : .expired
        }
        subscription.lastSignedDate = signedDate ?? subscription.lastSignedDate
        store(subscription, in: &facts)
        if let storefront = transaction.storefront { facts.storefront = storefront }
        return true
    }

    /// Folds what only a customer's transaction history (Get Transaction History) tells: whether an introductory
    /// offer was used in a subscription group, when the customer first subscribed, and how many renewals there were.
    ///
    /// A group the facts do not have yet is created from its latest transaction (as
    /// ``fold(transaction:into:now:)`` does); for a group they have, state, product and dates are left as they are
    /// (fold the statuses for those), and only the history's facts are added: the introductory offer is never
    /// forgotten, the first purchase date only moves earlier, and the renewal count only grows.
    ///
    /// - Parameters:
    ///   - history: Verified transactions, in any order; non-subscription transactions are ignored.
    ///   - facts: The customer's facts.
    ///   - now: The time expiry is judged at for a new group.
    /// - Returns: Whether the facts changed.
    @discardableResult
    public static func fold(
        history: [JWSTransactionDecodedPayload],
        into facts: inout CustomerFacts,
        now: Date = Date()
    ) -> Bool {
        var groups: [String: [JWSTransactionDecodedPayload]] = [:]
        var order: [String] = []
        for transaction in history {
            guard transaction.type == nil || transaction.type == .autoRenewable, let productIdentifier = transaction.productIdentifier
            else { continue }
            let group = transaction.subscriptionGroupIdentifier ?? productIdentifier
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(transaction)
        }
        var changed = false
        for group in order {
            let transactions = groups[group] ?? []
            if facts.subscription(inGroup: group) == nil,
                let latest = transactions.max(by: { ($0.purchaseDate ?? .min) < ($1.purchaseDate ?? .min) })
            {
                changed = fold(transaction: latest, into: &facts, now: now) || changed
            }
            guard var subscription = facts.subscription(inGroup: group) else { continue }
            let before = subscription
            if transactions.contains(where: { $0.offerType == .introductoryOffer }) {
                subscription.hadIntroductoryOffer = true
            }
            if let first = transactions.compactMap(\.originalPurchaseDate).min().map({ Date(appStoreMilliseconds: $0) }),
                subscription.originalPurchaseDate.map({ first < $0 }) ?? true
            {
                subscription.originalPurchaseDate = first
            }
            let renewals = Set(transactions.filter { $0.transactionReason == .renewal }.compactMap(\.transactionId)).count
            subscription.renewalCount = max(subscription.renewalCount, renewals)
            if subscription != before {
                store(subscription, in: &facts)
                changed = true
            }
        }
        return changed
    }
}
