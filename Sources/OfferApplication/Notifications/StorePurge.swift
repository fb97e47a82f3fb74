import Foundation
import Logging
import Metrics
import OfferModel
import OfferStore
import ServiceLifecycle

/// Keeps the store's bookkeeping tables bounded, on a schedule no traffic pattern can starve: every
/// ``interval`` it deletes stored retention answers older than ``storedAnswerLifetime`` and processed notification
/// UUIDs older than ``processedNotificationLifetime`` (docs/store.md "Bounded tables"), and subscription events
/// older than ``subscriptionEventLifetime`` (docs/outcomes.md).
///
/// Both lifetimes are far longer than the windows they protect: a stored answer must outlive the clock skew a
/// real-time request may have (after it, the request is refused as stale, so no replay signs twice); a processed
/// UUID must outlive the App Store's retries of a notification (up to five, over about three days).
package struct StorePurge: Service {
    let store: any StoredAnswers & OutcomeLog & ExperimentLog & PolicyDecisionLog
    let clockSkew: TimeInterval
    let logger: Logger
    var interval: Duration = .seconds(600)
    /// How long the decision log keeps decisions (`OFFER_SIGNER_DECISION_LOG_DAYS`).
    var decisionLogLifetime: TimeInterval = 90 * 86_400
    let now: @Sendable () -> Date = { Date() }

    /// Stored answers: 7 days, and never less than twice the clock skew.
    var storedAnswerLifetime: TimeInterval { max(7 * 86_400, 2 * clockSkew) }
    /// Processed notification UUIDs: 30 days (Apple retries for about 3).
    static let processedNotificationLifetime: TimeInterval = 30 * 86_400
    /// Subscription events: 90 days. They wait for a redemption whose notification arrives after them (Apple
    /// retries for about 3 days); App Store answers bring their renewals again.
    static let subscriptionEventLifetime: TimeInterval = 90 * 86_400
    /// Subscription transactions (what experiment reports read): 800 days by purchase date, twice the longest
    /// window (400 days), so the report of every customer exposed in the last 400 days stays exact.
    static let subscriptionTransactionLifetime: TimeInterval = 800 * 86_400

    package init(
        store: any StoredAnswers & OutcomeLog & ExperimentLog & PolicyDecisionLog,
        clockSkew: TimeInterval,
        decisionLogDays: Int = 90,
        logger: Logger
    ) {
        self.store = store
        self.clockSkew = clockSkew
        self.decisionLogLifetime = TimeInterval(decisionLogDays) * 86_400
        self.logger = logger
    }

    package func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await purgeOnce()
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// One purge; a failure is logged and tried again at the next interval.
    func purgeOnce() async {
        let now = now()
        do {
            let (answers, notifications) = try await store.purgeExpired(
                storedAnswersBefore: now.addingTimeInterval(-storedAnswerLifetime),
                processedNotificationsBefore: now.addingTimeInterval(-Self.processedNotificationLifetime)
            )
            Counter(label: "offer_signer_store_purged_total", dimensions: [("table", "stored_answers")]).increment(by: answers)
            Counter(label: "offer_signer_store_purged_total", dimensions: [("table", "processed_notifications")]).increment(by: notifications)
            let events = try await store.purgeSubscriptionEvents(recordedBefore: now.addingTimeInterval(-Self.subscriptionEventLifetime))
            Counter(label: "offer_signer_store_purged_total", dimensions: [("table", "subscription_events")]).increment(by: events)
            let transactions = try await store.purgeSubscriptionTransactions(
                purchasedBefore: now.addingTimeInterval(-Self.subscriptionTransactionLifetime)
            )
            Counter(label: "offer_signer_store_purged_total", dimensions: [("table", "subscription_transactions")]).increment(by: transactions)
            let decisions = try await store.purgeDecisionLog(before: now.addingTimeInterval(-decisionLogLifetime))
            Counter(label: "offer_signer_store_purged_total", dimensions: [("table", "policy_decisions")]).increment(by: decisions)
            if answers + notifications + events + transactions + decisions > 0 {
                logger.info(
                    "purged expired store rows",
                    metadata: [
                        "storedAnswers": "\(answers)", "processedNotifications": "\(notifications)", "subscriptionEvents": "\(events)",
                        "subscriptionTransactions": "\(transactions)", "decisions": "\(decisions)",
                    ]
                )
            }
        } catch {
            logger.warning("could not purge expired store rows; trying again later", metadata: ["error": "\(type(of: error))"])
        }
    }
}
