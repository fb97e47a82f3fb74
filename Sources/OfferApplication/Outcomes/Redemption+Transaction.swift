import AppStoreNotifications
import Foundation
import OfferModel
import OfferStore

/// What a verified transaction is to the outcome report.
enum TransactionOffer: Sendable, Equatable {
    /// It carried no offer (`offerType` absent).
    case none
    /// A redemption to record.
    case redemption(Redemption)
    /// It carried an offer but a value is not what Apple sends: said in the log (the reason names the field, never
    /// its value), never an error to the App Store — the notification is still applied to the customer.
    case refused(reason: String)
}

extension Redemption {
    /// The redemption a verified transaction is, if it carried an offer. Every value is
    /// bounded: identifiers and the purchase date must be valid or nothing is recorded; a price out of
    /// ``Redemption/priceRange``, a currency, storefront, discount type or period that is not what Apple sends is
    /// left out and the rest recorded.
    /// - Parameters:
    ///   - customer: the customer the transaction is filed under.
    ///   - now: the current time (a purchase more than a day ahead of it is refused).
    static func of(_ transaction: JWSTransactionDecodedPayload, customer: CustomerKey, now: Date) -> TransactionOffer {
        guard let offerType = transaction.offerType else { return .none }
        guard let environment = transaction.environment?.rawValue, OutcomeFields.isWord(environment, maximum: 32) else {
            return .refused(reason: "environment missing or not a word")
        }
        guard let transactionId = transaction.transactionId, OutcomeFields.isTransactionIdentifier(transactionId) else {
            return .refused(reason: "transactionId missing or not 1 to 64 digits")
        }
        guard let originalTransactionId = transaction.originalTransactionId, OutcomeFields.isTransactionIdentifier(originalTransactionId) else {
            return .refused(reason: "originalTransactionId missing or not 1 to 64 digits")
        }
        guard let productIdentifier = transaction.productIdentifier, OutcomeFields.isIdentifier(productIdentifier) else {
            return .refused(reason: "productId missing, longer than 256 bytes or with a control character")
        }
        var offerIdentifier: String?
        if let identifier = transaction.offerIdentifier {
            guard OutcomeFields.isIdentifier(identifier) else {
                return .refused(reason: "offerIdentifier longer than 256 bytes, empty or with a control character")
            }
            offerIdentifier = identifier
        }
        guard let purchaseDate = transaction.purchaseDate, OutcomeFields.isPlausibleDate(purchaseDate, now: now) else {
            return .refused(reason: "purchaseDate missing or outside 2008 to a day from now")
        }
        let price = transaction.price.flatMap { Redemption.priceRange.contains($0) ? $0 : nil }
        return .redemption(
            Redemption(
                environment: environment,
                transactionId: transactionId,
                originalTransactionId: originalTransactionId,
                customer: customer,
                productIdentifier: productIdentifier,
                offerType: offerType.rawValue,
                offerIdentifier: offerIdentifier,
                offerDiscountType: transaction.offerDiscountType.map(\.rawValue).flatMap { OutcomeFields.isConstant($0) ? $0 : nil },
                offerPeriod: transaction.offerPeriod.flatMap { OutcomeFields.isDuration($0) ? $0 : nil },
                price: price,
                currency: price == nil ? nil : transaction.currency.flatMap { OutcomeFields.isCode($0) ? $0 : nil },
                storefront: transaction.storefront.flatMap { OutcomeFields.isCode($0) ? $0 : nil },
                purchaseDate: purchaseDate
            )
        )
    }
}

/// The checks every outcome field from the network passes.
enum OutcomeFields {
    /// 2008-01-01, before any App Store purchase.
    static let earliestDate: Int64 = 1_199_145_600_000

    static func isTransactionIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// A product or offer identifier: 1 to 256 bytes, no control or invisible-format character.
    static func isIdentifier(_ text: String) -> Bool {
        (1...256).contains(text.utf8.count)
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }
    }

    /// Letters only (an environment name).
    static func isWord(_ text: String, maximum: Int) -> Bool {
        (1...maximum).contains(text.utf8.count) && text.utf8.allSatisfy { ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }
    }

    /// Three upper-case letters or digits (a currency, a storefront).
    static func isCode(_ text: String) -> Bool {
        text.utf8.count == 3
            && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// An upper-case constant (`PAY_AS_YOU_GO`), at most 32 bytes.
    static func isConstant(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || $0 == UInt8(ascii: "_") }
    }

    /// An ISO 8601 duration as Apple writes it (`P1M`, `P2W`, `P1Y`), at most 32 bytes.
    static func isDuration(_ text: String) -> Bool {
        (2...32).contains(text.utf8.count) && text.hasPrefix("P")
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// Unix milliseconds from 2008 to a day after `now`.
    static func isPlausibleDate(_ milliseconds: Int64, now: Date) -> Bool {
        let latest = Int64((now.timeIntervalSince1970 + 86_400) * 1000)
        return milliseconds >= earliestDate && milliseconds <= latest
    }
}
