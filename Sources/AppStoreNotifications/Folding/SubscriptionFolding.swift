import Foundation
import OfferModel

/// Folds what the App Store says (a notification, a signed transaction, renewal info) into a customer's
/// facts. Pure: the store applies it in a transaction.
///
/// Out-of-order delivery never moves a customer backwards: a subscription's facts remember the `signedDate`
/// of the newest data folded in, and older data is ignored for it.
public enum SubscriptionFolding {
    /// Folds a verified notification, with its verified transaction and renewal info.
    /// - Returns: whether the facts changed.
    @discardableResult
    public static func fold(_ decoded: DecodedNotification, into facts: inout CustomerFacts) -> Bool {
        let notification = decoded.notification
        guard let type = notification.notificationType, type != .test, let transaction = decoded.transaction else { return false }
        let signedDate = (notification.signedDate ?? transaction.signedDate).map { Date(appStoreMilliseconds: $0) }
        guard var subscription = current(for: transaction, in: facts) else { return false }
        if let last = subscription.lastSignedDate, let signedDate, signedDate < last { return false }

        apply(transaction: transaction, renewalInfo: decoded.renewalInfo, to: &subscription)
        if let status = notification.data?.status { subscription.state = state(of: status) ?? subscription.state }
        let subtype = notification.subtype
        switch type {
        case .subscribed:
            subscription.state = .active
        case .didRenew:
            subscription.state = .active
            subscription.renewalCount += 1
        case .didChangeRenewalStatus:
            if subtype == .autoRenewDisabled { subscription.autoRenewEnabled = false }
            if subtype == .autoRenewEnabled { subscription.autoRenewEnabled = true }
        case .didChangeRenewalPref:
            subscription.downgraded = subtype == .downgrade
        case .didFailToRenew:
            subscription.state = subtype == .gracePeriod ? .inGracePeriod : .inBillingRetry
        case .gracePeriodExpired:
            subscription.state = .inBillingRetry
        case .expired:
            subscription.state = .expired
            subscription.autoRenewEnabled = false
            switch subtype {
            case .some(.voluntary): subscription.expirationIntent = 1
            case .some(.billingRetry): subscription.expirationIntent = 2
            case .some(.priceIncrease): subscription.expirationIntent = 3
            case .some(.productNotForSale): subscription.expirationIntent = 4
            default: break
            }
        case .offerRedeemed:
            subscription.state = .active
        case .refund, .revoke:
            subscription.state = .revoked
        case .renewalExtended:
            subscription.state = .active
        default:
            break
        }
        subscription.lastSignedDate = signedDate ?? subscription.lastSignedDate
        store(subscription, in: &facts)
        if let storefront = transaction.storefront { facts.storefront = storefront }
        return true
    }

    /// Folds a verified signed transaction an app sent (StoreKit 2 `jwsRepresentation`): it proves the
    /// customer has or had this subscription, which the App Store's own rule needs.
    @discardableResult
    public static func fold(transaction: JWSTransactionDecodedPayload, into facts: inout CustomerFacts, now: Date = Date()) -> Bool {
        guard var subscription = current(for: transaction, in: facts) else { return false }
        let signedDate = transaction.signedDate.map { Date(appStoreMilliseconds: $0) }
        if let last = subscription.lastSignedDate, let signedDate, signedDate < last { return false }
        apply(transaction: transaction, renewalInfo: nil, to: &subscription)
        if transaction.revocationDate != nil {
            subscription.state = .revoked
        } else if let expires = subscription.expiresDate {
            subscription.state = expires > now ? .active : .expired
        }
        subscription.lastSignedDate = signedDate ?? subscription.lastSignedDate
        store(subscription, in: &facts)
        if let storefront = transaction.storefront { facts.storefront = storefront }
        return true
    }

    /// The facts of the transaction's subscription group (new ones for a group not seen before), or `nil` for
    /// a transaction that is not an auto-renewable subscription.
    static func current(for transaction: JWSTransactionDecodedPayload, in facts: CustomerFacts) -> SubscriptionFacts? {
        guard transaction.type == nil || transaction.type == .autoRenewable,
            let productIdentifier = transaction.productIdentifier
        else { return nil }
        let group = transaction.subscriptionGroupIdentifier ?? productIdentifier
        return facts.subscription(inGroup: group)
            ?? SubscriptionFacts(subscriptionGroupIdentifier: group, productIdentifier: productIdentifier, state: .active)
    }

    static func apply(transaction: JWSTransactionDecodedPayload, renewalInfo: JWSRenewalInfoDecodedPayload?, to subscription: inout SubscriptionFacts)
    {
        if let productIdentifier = transaction.productIdentifier { subscription.productIdentifier = productIdentifier }
        subscription.originalTransactionId = transaction.originalTransactionId ?? subscription.originalTransactionId
        if let expires = transaction.expiresDate { subscription.expiresDate = Date(appStoreMilliseconds: expires) }
        if let original = transaction.originalPurchaseDate { subscription.originalPurchaseDate = Date(appStoreMilliseconds: original) }
        if transaction.offerType == .introductoryOffer { subscription.hadIntroductoryOffer = true }
        if let renewalInfo {
            if let status = renewalInfo.autoRenewStatus { subscription.autoRenewEnabled = status == .on }
            subscription.autoRenewProductIdentifier = renewalInfo.autoRenewProductId ?? subscription.autoRenewProductIdentifier
            if let intent = renewalInfo.expirationIntent { subscription.expirationIntent = Int(intent.rawValue) }
            if renewalInfo.isInBillingRetryPeriod == true { subscription.state = .inBillingRetry }
            if let grace = renewalInfo.gracePeriodExpiresDate, Date(appStoreMilliseconds: grace) > Date(), renewalInfo.isInBillingRetryPeriod == true
            {
                subscription.state = .inGracePeriod
            }
        }
    }

    static func state(of status: SubscriptionStatus) -> SubscriptionState? {
        switch status {
        case .active: .active
        case .expired: .expired
        case .billingRetry: .inBillingRetry
        case .billingGracePeriod: .inGracePeriod
        case .revoked: .revoked
        default: nil
        }
    }

    static func store(_ subscription: SubscriptionFacts, in facts: inout CustomerFacts) {
        if let index = facts.subscriptions.firstIndex(where: { $0.subscriptionGroupIdentifier == subscription.subscriptionGroupIdentifier }) {
            facts.subscriptions[index] = subscription
        } else {
            facts.subscriptions.append(subscription)
        }
        facts.updatedAt = Date()
    }
}
