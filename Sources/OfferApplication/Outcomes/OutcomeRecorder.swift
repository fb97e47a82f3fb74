import AppStoreNotifications
import Foundation
import Logging
import Metrics
import OfferModel
import OfferStore

/// Records what App Store data says about offers (docs/outcomes.md): every transaction that carried an offer, once
/// per (environment, transaction), attributed to the signature that made it when this service signed one; and what
/// happened to the subscription since — a renewal at full price, a refund, an expiry, auto-renew turned back on —
/// whichever arrives first. Counts `offer_signer_redemptions_total{offerType,attributed}`.
///
/// Everything recorded is idempotent, so a notification delivered twice, or one the store failed on and the App
/// Store retries, changes nothing the second time. A value that is not what Apple sends is left out, or the
/// redemption is not recorded, with the reason in the log: never an error to the App Store.
package struct OutcomeRecorder: Sendable {
    let store: any OutcomeLog & ExperimentLog
    let logger: Logger
    let now: @Sendable () -> Date

    package init(store: any OutcomeLog & ExperimentLog, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.logger = logger
        self.now = now
    }

    /// What a verified notification records of outcomes, filed with it (``NotificationFiling``): its subscription
    /// transaction, the redemption of the offer it carried (one refused is logged and left out), the event it is.
    func records(
        of decoded: DecodedNotification,
        customer: CustomerKey
    )
        -> (transaction: SubscriptionTransaction?, redemption: Redemption?, event: SubscriptionEvent?)
    {
        guard let transaction = decoded.transaction else { return (nil, nil, nil) }
        return (
            SubscriptionTransaction.of(transaction, customer: customer, now: now()),
            redemption(of: transaction, customer: customer, source: "notification"),
            Self.event(of: decoded, now: now())
        )
    }

    /// Records transactions that arrived without a notification (a signed transaction an app sent, the App Store
    /// Server API's answer): offers as redemptions, renewals without an offer as renewals. A store failure is
    /// logged, never failing the request that brought them.
    func recordQuietly(_ transactions: [JWSTransactionDecodedPayload], customer: CustomerKey, source: String) async {
        if transactions.count > Self.transactionsPerAnswer {
            logger.warning(
                "offer outcomes: only the first transactions of an answer are recorded",
                metadata: [
                    "source": "\(source)", "customer": "\(CustomerHash.of(customer))", "transactions": "\(transactions.count)",
                    "recorded": "\(Self.transactionsPerAnswer)",
                ]
            )
        }
        var failed = 0
        for transaction in transactions.prefix(Self.transactionsPerAnswer) {
            // Each on its own: one failure does not drop the transactions after it.
            do {
                try await record(transaction: transaction, customer: customer, source: source)
                if transaction.offerType == nil, transaction.transactionReason == .renewal,
                    let event = Self.renewal(transaction, now: now())
                {
                    try await store.recordSubscriptionEvent(event)
                }
            } catch {
                failed += 1
            }
        }
        if failed > 0 {
            logger.error(
                "offer outcomes not recorded: the customer store failed",
                metadata: [
                    "source": "\(source)", "customer": "\(CustomerHash.of(customer))", "transactions": "\(failed)",
                ]
            )
        }
    }

    /// At most this many transactions of one answer are looked at (an answer's history is a page of Apple's).
    static let transactionsPerAnswer = 200

    private func record(transaction: JWSTransactionDecodedPayload, customer: CustomerKey, source: String) async throws {
        // Every subscription transaction, offer or not: what an experiment's metrics read.
        if let subscription = SubscriptionTransaction.of(transaction, customer: customer, now: now()) {
            try await store.recordTransaction(subscription)
        }
        guard let redemption = redemption(of: transaction, customer: customer, source: source) else { return }
        counted(try await store.recordRedemption(redemption), of: redemption, source: source)
    }

    /// The redemption a transaction carries, if any; one that is not what Apple sends is logged and left out.
    private func redemption(of transaction: JWSTransactionDecodedPayload, customer: CustomerKey, source: String) -> Redemption? {
        switch Redemption.of(transaction, customer: customer, now: now()) {
        case .none:
            return nil
        case .refused(let reason):
            logger.warning(
                "a transaction that carried an offer was not recorded",
                metadata: [
                    "reason": "\(reason)", "source": "\(source)", "customer": "\(CustomerHash.of(customer))",
                ]
            )
            return nil
        case .redemption(let redemption):
            if transaction.price != nil, redemption.price == nil {
                logger.warning("a redemption's price is outside 0 to 10^12 milliunits; recorded without a price", metadata: ["source": "\(source)"])
            }
            return redemption
        }
    }

    /// Counts and logs a redemption the store recorded as new (``count(offerType:attributed:)``).
    func counted(_ recording: RedemptionRecording, of redemption: Redemption, source: String) {
        guard case .recorded(let channel) = recording else { return }
        Self.count(offerType: redemption.offerType, attributed: channel != nil)
        logger.info(
            "offer redeemed",
            metadata: [
                "customer": "\(CustomerHash.of(redemption.customer))", "productIdentifier": "\(redemption.productIdentifier)",
                "offerType": "\(redemption.offerType)", "attributed": "\(channel ?? "no")", "source": "\(source)",
            ]
        )
    }

    /// `offer_signer_redemptions_total{offerType,attributed}`: `offerType` 1 to 5, or `other` for a value Apple adds
    /// later (so a hostile value cannot grow the metric's label set).
    static func count(offerType: Int32, attributed: Bool) {
        let type = (1...5).contains(offerType) ? String(offerType) : "other"
        Counter(label: "offer_signer_redemptions_total", dimensions: [("offerType", type), ("attributed", attributed ? "true" : "false")]).increment()
    }

    /// The subscription event a notification is, if any: `DID_RENEW` without an offer, `REFUND`, `EXPIRED`,
    /// `DID_CHANGE_RENEWAL_STATUS` / `AUTO_RENEW_ENABLED`.
    static func event(of decoded: DecodedNotification, now: Date) -> SubscriptionEvent? {
        guard let transaction = decoded.transaction, let type = decoded.notification.notificationType else { return nil }
        let signedDate = decoded.notification.signedDate
        let kind: SubscriptionEvent.Kind
        let at: Int64?
        switch type {
        case .didRenew:
            guard transaction.offerType == nil else { return nil }
            return renewal(transaction, now: now)
        case .refund:
            kind = .refunded
            at = transaction.revocationDate ?? signedDate
        case .expired:
            kind = .expired
            at = transaction.expiresDate ?? signedDate
        case .didChangeRenewalStatus where decoded.notification.subtype == .autoRenewEnabled:
            kind = .autoRenewEnabled
            at = decoded.renewalInfo?.signedDate ?? signedDate
        default:
            return nil
        }
        return event(kind, of: transaction, at: at, now: now)
    }

    /// A renewal at full price: the renewal transaction's purchase.
    static func renewal(_ transaction: JWSTransactionDecodedPayload, now: Date) -> SubscriptionEvent? {
        event(.renewed, of: transaction, at: transaction.purchaseDate, now: now)
    }

    private static func event(
        _ kind: SubscriptionEvent.Kind,
        of transaction: JWSTransactionDecodedPayload,
        at: Int64?,
        now: Date
    ) -> SubscriptionEvent? {
        guard let environment = transaction.environment?.rawValue, OutcomeFields.isWord(environment, maximum: 32),
            let original = transaction.originalTransactionId, OutcomeFields.isTransactionIdentifier(original),
            let at, OutcomeFields.isPlausibleDate(at, now: now)
        else { return nil }
        let transactionId = transaction.transactionId.flatMap { OutcomeFields.isTransactionIdentifier($0) ? $0 : nil } ?? ""
        return SubscriptionEvent(environment: environment, originalTransactionId: original, kind: kind, at: at, transactionId: transactionId)
    }
}
