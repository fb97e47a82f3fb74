import AppStoreNotifications
import Foundation
import OfferModel
import OfferStore

extension SubscriptionTransaction {
    /// The subscription transaction a verified transaction is, for an experiment's metrics (docs/experiments.md): any
    /// transaction with a subscription group, offer or not. `nil` when it has none, or an identifier or the purchase
    /// date is not what Apple sends; a price out of ``Redemption/priceRange``, a currency that is not three letters,
    /// or an expiry or revocation date out of range is left out and the rest kept.
    static func of(_ transaction: JWSTransactionDecodedPayload, customer: CustomerKey, now: Date) -> SubscriptionTransaction? {
        guard let environment = transaction.environment?.rawValue, OutcomeFields.isWord(environment, maximum: 32),
            let transactionId = transaction.transactionId, OutcomeFields.isTransactionIdentifier(transactionId),
            let originalTransactionId = transaction.originalTransactionId, OutcomeFields.isTransactionIdentifier(originalTransactionId),
            let productIdentifier = transaction.productIdentifier, OutcomeFields.isIdentifier(productIdentifier),
            let group = transaction.subscriptionGroupIdentifier, OutcomeFields.isIdentifier(group),
            let purchaseDate = transaction.purchaseDate, OutcomeFields.isPlausibleDate(purchaseDate, now: now)
        else { return nil }
        let price = transaction.price.flatMap { Redemption.priceRange.contains($0) ? $0 : nil }
        let currency = price == nil ? nil : transaction.currency.flatMap { OutcomeFields.isCode($0) ? $0 : nil }
        // A period ends after it began and within 10 years of it; a refund, after 2008 and not ahead of now by a day.
        let expires = transaction.expiresDate.flatMap { $0 > purchaseDate && $0 - purchaseDate < 10 * 366 * 86_400_000 ? $0 : nil }
        let revocation = transaction.revocationDate.flatMap { OutcomeFields.isPlausibleDate($0, now: now) ? $0 : nil }
        return SubscriptionTransaction(
            environment: environment,
            transactionId: transactionId,
            originalTransactionId: originalTransactionId,
            customer: customer,
            productIdentifier: productIdentifier,
            subscriptionGroupIdentifier: group,
            price: price,
            currency: currency,
            purchaseDate: purchaseDate,
            expiresDate: expires,
            revocationDate: revocation
        )
    }
}
