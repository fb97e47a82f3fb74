import AppStoreNotifications
import Foundation
import Logging
import Metrics
import OfferErrors
import OfferModel
import OfferStore
import Synchronization
import Tracing

/// What became of one notification.
public enum IngestOutcome: String, Sendable, Codable {
    /// Folded into a customer's facts.
    case processed
    /// Seen before (same `notificationUUID`): nothing changed.
    case duplicate
    /// Valid, but nothing to fold (TEST, no notification type, no transaction, a transaction that names no
    /// customer and no original transaction).
    case ignored
    /// Valid and new, but older than what the store already holds for that subscription: recorded as seen,
    /// nothing changed.
    case stale
}

/// What a replay did, line by line.
public struct ReplaySummary: Sendable, CustomStringConvertible {
    public var processed = 0
    public var duplicate = 0
    public var ignored = 0
    public var stale = 0
    /// Lines that did not verify or parse.
    public var refused = 0
    /// Lines the store could not take (retry them).
    public var failed = 0
    /// One message per refused or failed line.
    public var problems: [String] = []

    public var description: String {
        "processed: \(processed), duplicate: \(duplicate), stale: \(stale), ignored: \(ignored), refused: \(refused), failed: \(failed)"
    }
}

/// What the ingestor writes: notifications filed once, customers' facts and the claims of their transactions, the
/// offers App Store data carries and what became of them, transactions for the experiments' reports, the audit of
/// bindings refused. Each a capability of its own; the SQLite file and PostgreSQL stores have them all.
public typealias NotificationStore = ProcessedNotifications & CustomerFactsStore & OutcomeLog & ExperimentLog & AuditLog

/// Verifies App Store Server Notifications V2 and signed transactions and feeds the customer store.
///
/// Customers are found by the transaction's `appAccountToken` (the lower-cased `applicationUsername`), else by
/// `originalTransactionId` among the customers the store knows; a subscription nobody has claimed yet is kept
/// under `otid:<originalTransactionId>` until an app sends its signed transaction. A token moves nothing it
/// cannot prove (``CustomerBinding``): the first binding of a token to a subscription, and of a subscription to a
/// customer, wins.
public struct NotificationIngestor: Sendable {
    /// One verifier per app, by bundle identifier.
    package let verifiers: [String: SignedDataVerifier]
    package let store: any NotificationStore
    let logger: Logger
    /// How far ahead of now an App Store `signedDate` may be (clocks differ); beyond it a payload is refused.
    public let clockSkew: TimeInterval
    /// Now: the clock every date check reads (injected by tests).
    let now: @Sendable () -> Date
    private let processed = Counter(label: "offer_signer_notifications_total", dimensions: [("outcome", "processed")])
    private let duplicates = Counter(label: "offer_signer_notifications_total", dimensions: [("outcome", "duplicate")])
    private let stale = Counter(label: "offer_signer_notifications_total", dimensions: [("outcome", "stale")])
    private let ignored = Counter(label: "offer_signer_notifications_total", dimensions: [("outcome", "ignored")])
    private let invalid = Counter(label: "offer_signer_notifications_total", dimensions: [("outcome", "invalid")])

    /// Which `appAccountToken`s name a customer: UUIDs (Apple's type), or for the demo any valid identifier.
    package let tokenRule: CustomerBinding.TokenRule
    /// Records the offers App Store data carries and what became of them (docs/outcomes.md).
    package let outcomes: OutcomeRecorder

    /// The default ``clockSkew``: five minutes.
    public static let defaultClockSkew: TimeInterval = 300

    /// - Parameter readableTokens: take any valid customer identifier as an `appAccountToken` (the demo's stand-in
    ///   App Store); otherwise only a UUID, Apple's type, names a customer.
    public init(
        verifiers: [String: SignedDataVerifier],
        store: any NotificationStore,
        logger: Logger,
        clockSkew: TimeInterval = NotificationIngestor.defaultClockSkew,
        readableTokens: Bool = false,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.verifiers = verifiers
        self.store = store
        self.logger = logger
        self.tokenRule = readableTokens ? .customerIdentifier : .uuid
        self.clockSkew = clockSkew
        self.now = now
        self.outcomes = OutcomeRecorder(store: store, logger: logger, now: now)
    }

    /// Verifies one `signedPayload` and folds it in, once.
    /// - Throws: ``OfferServiceError`` 400 `invalid_signed_payload` (nothing changed) or 503 `store_unavailable` (the
    ///   App Store retries).
    public func ingest(signedPayload: String) async throws(OfferServiceError) -> IngestOutcome {
        let latest = now().addingTimeInterval(clockSkew)
        let decoded = try await Traces.span("app_store.verify") { () async throws(OfferServiceError) in
            try await verify { verifier in try await verifier.verifyAndDecodeNotificationContents(signedPayload, signedNoLaterThan: latest) }
        }
        let notification = decoded.notification
        guard let uuid = notification.notificationUUID, let transaction = decoded.transaction, let type = notification.notificationType,
            type != .test, let bundleIdentifier = notification.data?.bundleIdentifier
        else {
            ignored.increment()
            return .ignored
        }
        let outcome: IngestOutcome
        do {
            let environment = decoded.notification.data?.environment?.rawValue
            var attempt = 0
            var filed: (binding: CustomerBinding, filed: NotificationFiled, redemption: Redemption?, changed: Bool)?
            while filed == nil {
                attempt += 1
                guard
                    let binding = try await CustomerBinding.resolve(transaction, bundleIdentifier: bundleIdentifier, store: store, tokens: tokenRule)
                else {
                    // Nothing names a customer: recorded as seen, filed under no one (never a shared customer).
                    _ = try await store.markNotificationProcessed(notificationUUID: uuid)
                    ignored.increment()
                    logger.warning(
                        "App Store notification names no customer and no original transaction; nothing was filed",
                        metadata: ["notificationUUID": "\(uuid)", "type": "\(type.rawValue)"]
                    )
                    return .ignored
                }
                let changed = Changed()
                let claims = CustomerBinding.claims([transaction], for: binding.key, environment: environment, tokens: tokenRule)
                // The facts and the outcomes in one write, shared with the notifications arriving beside it (one
                // commit a batch); a redemption is recorded also for a duplicate (idempotent).
                let records = outcomes.records(of: decoded, customer: binding.key)
                let filing = NotificationFiling(
                    notificationUUID: uuid,
                    customer: binding.key,
                    claims: claims,
                    transaction: records.transaction,
                    redemption: records.redemption,
                    event: records.event
                ) { facts in
                    // The last fold's word: a batch the store files again one by one (PostgreSQL's fallback) folds
                    // again over the facts as they then are, and that fold says whether they changed.
                    changed.record(SubscriptionFolding.fold(decoded, into: &facts))
                }
                do {
                    let result = try await Traces.span("notification.apply", ["app_store.notification_type": .string(type.rawValue)]) {
                        try await store.fileNotification(filing)
                    }
                    try await binding.report(source: "notification", store: store, logger: logger)
                    filed = (binding, result, records.redemption, changed.value)
                } catch let error as OfferStoreError where error.code == .transactionClaimed && attempt < 3 {
                    // Another customer claimed the subscription between the resolution and the write: resolve again,
                    // now that its owner is stored, and file the notification under that owner.
                    continue
                }
            }
            guard let filed else {
                throw OfferStoreError(.transactionClaimed, "The subscription's owner kept changing while the notification was filed.")
            }
            let binding = filed.binding
            outcome = !filed.filed.applied ? .duplicate : filed.changed ? .processed : .stale
            if let recording = filed.filed.redemption, let redemption = filed.redemption {
                outcomes.counted(recording, of: redemption, source: "notification")
            }
            logger.info(
                "App Store notification",
                metadata: [
                    "type": "\(type.rawValue)", "subtype": "\(notification.subtype?.rawValue ?? "-")",
                    "notificationUUID": "\(uuid)", "customer": "\(CustomerHash.of(binding.key))", "outcome": "\(outcome.rawValue)",
                ]
            )
        } catch {
            logger.error("customer store failed while applying a notification; the App Store will retry", metadata: ["notificationUUID": "\(uuid)"])
            throw OfferServiceError.storeUnavailable
        }
        switch outcome {
        case .processed: processed.increment()
        case .duplicate: duplicates.increment()
        case .stale: stale.increment()
        case .ignored: ignored.increment()
        }
        return outcome
    }

    /// Verifies a StoreKit 2 signed transaction an app sent with a sign request and folds it into that
    /// customer's facts.
    /// - Returns: the verified transaction.
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` (it does not verify, or is another app's), 403
    ///   `customer_mismatch` (another customer's `appAccountToken`), 409 `transaction_claimed`, 503 `store_unavailable`.
    @discardableResult
    public func ingest(signedTransaction: String, for key: CustomerKey) async throws(OfferServiceError) -> JWSTransactionDecodedPayload {
        let transaction = try await verify(field: "signedTransaction") { verifier in try await verifier.verifyAndDecodeTransaction(signedTransaction)
        }
        guard transaction.bundleIdentifier == key.bundleIdentifier else {
            throw OfferServiceError.invalidRequest(
                field: "signedTransaction",
                "signedTransaction is for another app (\(transaction.bundleIdentifier ?? "none"))."
            )
        }
        if let token = CustomerBinding.token(of: transaction, rule: tokenRule), token != key.applicationUsername {
            throw OfferServiceError(
                .customerMismatch,
                """
                signedTransaction belongs to another customer (its appAccountToken is not this applicationUsername); send the signed-in \
                customer's own transaction, or none.
                """,
                field: "signedTransaction"
            )
        }
        // The first customer that presented an original transaction (or that the App Store's notifications were
        // filed under) keeps it: the same rule as for notifications.
        let binding: CustomerBinding?
        do {
            binding = try await CustomerBinding.resolve(
                transaction,
                bundleIdentifier: key.bundleIdentifier,
                store: store,
                claimant: key,
                tokens: tokenRule
            )
        } catch {
            throw OfferServiceError.storeUnavailable
        }
        if let binding, binding.key != key {
            try? await binding.report(source: "signed_transaction", store: store, logger: logger)
            throw Self.claimedError
        }
        // The check above read the owners; the write claims the original transaction (one owner per app,
        // environment and original transaction, in the write's own transaction) and, under the customer's lock,
        // refuses a second subscription of the group: two presentations at the same instant cannot both pass.
        let original = transaction.originalTransactionId
        let group = transaction.subscriptionGroupIdentifier
        let claims = CustomerBinding.claims([transaction], for: key, tokens: tokenRule)
        do {
            try await store.updateCustomer(key, claiming: claims) { facts in
                if let original, let group, !facts.subscriptions.contains(where: { $0.originalTransactionId == original }),
                    let held = facts.subscription(inGroup: group)?.originalTransactionId, held != original
                {
                    throw OfferStoreError(.transactionClaimed, "This customer already holds another subscription of this group.")
                }
                SubscriptionFolding.fold(transaction: transaction, into: &facts)
            }
        } catch let error as OfferStoreError where error.code == .transactionClaimed {
            let conflict =
                (try? await CustomerBinding.resolve(
                    transaction,
                    bundleIdentifier: key.bundleIdentifier,
                    store: store,
                    claimant: key,
                    tokens: tokenRule
                ))
                .flatMap { $0 } ?? CustomerBinding(key: key, refused: key, conflict: .transactionClaimed)
            if conflict.conflict == nil {
                try? await CustomerBinding(key: key, refused: key, conflict: .transactionClaimed).report(
                    source: "signed_transaction",
                    store: store,
                    logger: logger
                )
            } else {
                try? await conflict.report(source: "signed_transaction", store: store, logger: logger)
            }
            throw Self.claimedError
        } catch {
            throw OfferServiceError.storeUnavailable
        }
        await outcomes.recordQuietly([transaction], customer: key, source: "signed_transaction")
        return transaction
    }

    /// 409 `transaction_claimed` for a signed transaction another customer owns.
    private static var claimedError: OfferServiceError {
        OfferServiceError(
            .transactionClaimed,
            """
            This subscription's original transaction is already claimed by another customer of this app, or this customer already holds another \
            subscription of its group; a signed transaction cannot move it. Set appAccountToken on purchases to tie them to your accounts.
            """,
            field: "signedTransaction"
        )
    }

    /// Verifies a Retention Messaging real-time request and finds its app: the one whose `appAppleId` it carries.
    /// - Returns: the app's bundle identifier and the decoded request.
    /// - Throws: ``OfferServiceError`` 400 `invalid_signed_payload` saying what did not verify.
    /// `fresh`: a live request, which must be signed within ``clockSkew`` of now by a chain valid now (a captured
    /// one being explained need not be).
    public func verifyRealtimeRequest(
        signedPayload: String,
        fresh: Bool = true
    ) async throws(OfferServiceError) -> (bundleIdentifier: String, request: DecodedRealtimeRequestBody) {
        let freshness = fresh ? SignedDataVerifier.Freshness(now: now(), skew: clockSkew) : nil
        return try await verify(nextAppOn: .wrongAppAppleId) { verifier in
            (verifier.bundleIdentifier, try await verifier.verifyAndDecodeRealtimeRequest(signedPayload, freshness: freshness))
        }
    }

    /// Tries the verifier of every configured app (the payload names its app; a verifier checks it is its own
    /// and refuses with `nextAppOn` when it is another app's).
    private func verify<T: Sendable>(
        field: String? = nil,
        nextAppOn: SignedDataVerificationError.Code = .wrongBundleId,
        _ body: (SignedDataVerifier) async throws -> T
    ) async throws(OfferServiceError) -> T {
        var lastError: SignedDataVerificationError?
        for verifier in verifiers.values.sorted(by: { $0.bundleIdentifier < $1.bundleIdentifier }) {
            do {
                return try await body(verifier)
            } catch let error as SignedDataVerificationError {
                lastError = error
                if error.code != nextAppOn { break }
            } catch {
                break
            }
        }
        invalid.increment()
        let reason = lastError.map { "\($0.code.rawValue): \($0.message)" } ?? "no app is configured to receive App Store data"
        logger.warning("refused App Store signed data", metadata: ["reason": "\(reason)"])
        if let field {
            throw OfferServiceError.invalidRequest(field: field, "\(field) did not verify: \(reason)")
        }
        throw OfferServiceError(.invalidSignedPayload, "The signedPayload did not verify: \(reason)")
    }

}

/// A flag set inside a store transaction's body and read after it.
final class Changed: Sendable {
    private let flag = Mutex(false)
    /// What the latest of the folds said (a fold run again replaces the word of the one before).
    func record(_ changed: Bool) { flag.withLock { $0 = changed } }
    var value: Bool { flag.withLock { $0 } }
}
