import Foundation
import OfferErrors
import OfferModel

/// Which issued signatures to return; every field narrows, `nil` means any.
public struct IssuedSignatureQuery: Sendable, Hashable {
    public var bundleIdentifier: String?
    public var applicationUsername: String?
    public var productIdentifier: String?
    public var offerIdentifier: String?
    public var keyIdentifier: String?
    /// Only signatures with `timestamp >= since` (Unix ms).
    public var since: Int64?
    /// Only signatures with `timestamp < until` (Unix ms).
    public var until: Int64?
    /// At most this many, newest first.
    public var limit: Int

    public init(
        bundleIdentifier: String? = nil,
        applicationUsername: String? = nil,
        productIdentifier: String? = nil,
        offerIdentifier: String? = nil,
        keyIdentifier: String? = nil,
        since: Int64? = nil,
        until: Int64? = nil,
        limit: Int = 100
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.applicationUsername = applicationUsername.map { $0.lowercased() }
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.keyIdentifier = keyIdentifier
        self.since = since
        self.until = until
        self.limit = limit
    }
}

/// The customer store and issued-signature log (docs/design.md §4): SQLite embedded by default, PostgreSQL when
/// several replicas share it. Both implementations pass one test suite.
public protocol OfferStore: Sendable {
    /// Creates or upgrades the schema (versioned migrations); safe to run on every start.
    func migrate() async throws

    /// Opens the connections the store keeps and prepares the signing and retention paths' statements on each, so
    /// that the first requests after start-up do not wait for it (a server calls it after ``migrate()``). A
    /// failure is logged, not thrown: the statements are then prepared at their first use.
    func warmUp() async

    /// The facts of a customer, or `nil` if the store has never heard of them.
    func customerFacts(for key: CustomerKey) async throws -> CustomerFacts?

    /// The customers (of any app) who hold a subscription with this original transaction identifier.
    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey]

    /// Reads, changes and writes a customer's facts in one transaction (concurrent updates of one customer
    /// lose nothing). A customer the store has not heard of starts from empty facts.
    ///
    /// `claims`: the original transactions this write files under the customer. Each is claimed in the same
    /// transaction, one owner per (app, environment, original transaction) across every process sharing the
    /// database: the first claim wins, a later claim by its owner passes, and a claim by anyone else rolls the
    /// whole write back (``TransactionClaim``).
    /// - Returns: the facts as written.
    /// - Throws: ``OfferStoreError`` `transactionClaimed` (nothing written), `unavailable`; an error `body` throws,
    ///   unchanged.
    @discardableResult
    func updateCustomer(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts

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

    /// The names of documents (``document(named:)``) changed by any process sharing the store, as each change
    /// commits — PostgreSQL's LISTEN/NOTIFY; `"*"` when anything may have changed unheard (the listener
    /// reconnected). A store one process serves (a SQLite file) ends the stream at once: its process made every
    /// change itself.
    func documentChanges() -> AsyncStream<String>

    /// Keeps a console session (``ConsoleSessionRecord``) for every replica; expired sessions go, and beyond
    /// `limit` sessions the oldest.
    func saveConsoleSession(_ session: ConsoleSessionRecord, keepingAtMost limit: Int) async throws

    /// The console session of a cookie's digest, expired or not (the caller compares `expiresAt`), or `nil`.
    func consoleSession(digest: String) async throws -> ConsoleSessionRecord?

    /// Ends a console session on every replica.
    func deleteConsoleSession(digest: String) async throws

    /// Replaces what the store knows of an app's Retention Messaging catalogue in one environment (``RetentionCatalogueRecord``).
    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws

    /// What the store knows of an app's Retention Messaging catalogue in one environment, by kind and name.
    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord]

    /// The customer an original transaction of an app is claimed by (``TransactionClaim``), or `nil`.
    func transactionOwner(bundleIdentifier: String, environment: String, originalTransactionId: String) async throws -> CustomerKey?

    /// Records an App Store `notificationUUID` as seen without changing any customer (a notification that names
    /// no customer). - Returns: `false` when it was seen before.
    func markNotificationProcessed(notificationUUID: String) async throws -> Bool

    /// Deletes stored answers created before `storedAnswersBefore` and processed notification UUIDs recorded before
    /// `processedNotificationsBefore`.
    /// - Returns: how many rows of each went.
    func purgeExpired(storedAnswersBefore: Date, processedNotificationsBefore: Date) async throws -> (storedAnswers: Int, processedNotifications: Int)

    /// Runs `body` with the customer's facts and their issued signatures since `since` (Unix ms), serialized
    /// against every other `withCustomerTransaction`/`updateCustomer` for the same customer (also across
    /// processes sharing the database); what `body` returns is written in the same transaction: the facts
    /// (if changed) and the signature record (if any) — both durable before this returns, or neither.
    ///
    /// This is how a capped offer, a cool-down or a customer-service grant holds under concurrency: the decision
    /// reads the signatures already issued, and the signature it allows is recorded before the next decision for
    /// this customer can read. An error thrown by `body` rolls everything back and is rethrown unchanged.
    /// - Throws: ``OfferStoreError`` `duplicateNonce` when the record's nonce was recorded before (nothing is
    ///   written), `unavailable`.
    ///
    /// With an `answerKey` (an idempotency key, e.g. the App Store's `requestIdentifier`), the answer the first
    /// transaction under that key committed (``CustomerCommit/answer``) is shown to every later one
    /// (``CustomerSnapshot/storedAnswer``), which then writes nothing: a retried request gets the same answer and
    /// no second signature. The key is claimed before the body runs, so concurrent first uses of one key — under
    /// different customers' locks, on different replicas — wait for each other, and the later sees the earlier's
    /// answer. Answers are kept until ``purgeExpired(storedAnswersBefore:processedNotificationsBefore:)``. With an
    /// `answerKey` and `since` `Int64.max` (the body reads no signatures: a flow here for its idempotency alone),
    /// nothing is locked while the body decides: its answer is stored under the key, with its record, only if no
    /// other was stored meanwhile — else nothing is written and the body is shown that answer, whose value is
    /// returned. One customer's requests under different keys so do not wait for each other; facts the body returns
    /// are written under the customer's lock.
    func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        answerKey: String?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T

    /// Records an issued signature; `completion` is called once the record is durable (or has failed), on a thread
    /// of the store's — the one way to record (``record(_:)`` awaits it). Concurrent records share one transaction
    /// and one flush (group commit). With `startWhenReady`, a record that would start a batch alone hands the
    /// batch's start to it, to run once the caller has recorded what else it has at hand (an event loop: at the end
    /// of its current tick), so those records share the batch.
    /// - `completion` gets ``OfferStoreError`` `duplicateNonce` when the nonce was recorded before.
    func record(_ signature: IssuedSignature, startWhenReady: StartWhenReady?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void)

    /// Issued signatures, newest first.
    func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature]

    /// How many issued signatures match (the query's `limit` is ignored).
    func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int

    /// Records a transaction that carried an offer, once per (environment, transaction identifier), attributed to
    /// the latest signature this service issued for it before the purchase, if any (docs/outcomes.md), with what
    /// the subscription events already recorded say became of it.
    func recordRedemption(_ redemption: Redemption) async throws -> RedemptionRecording

    /// Records something that happened to a subscription (once) and applies it to the redemptions and retention
    /// answers recorded before it. - Returns: how many of those changed.
    @discardableResult
    func recordSubscriptionEvent(_ event: SubscriptionEvent) async throws -> Int

    /// Records a retention answer, once per app and `requestIdentifier`, saved at once if an event already says so.
    func recordRetentionAnswer(_ answer: RetentionAnswerRecord) async throws

    /// Deletes subscription events recorded before `recordedBefore` (they matter only until the notifications
    /// they follow have arrived). - Returns: how many went.
    func purgeSubscriptionEvents(recordedBefore: Date) async throws -> Int

    /// Deletes the subscription transactions purchased before `purchasedBefore` (what experiment reports read,
    /// kept for the longest window after the oldest exposure a report still needs; docs/experiments.md).
    /// - Returns: how many went.
    func purgeSubscriptionTransactions(purchasedBefore: Date) async throws -> Int

    /// What the offers of a window became.
    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport

    /// The same window's figures added up over every offer, read from the rollups and the time indexes: a cost
    /// bounded by the window's days and at most two part days of the log, however many offers and apps there are.
    func outcomeTotals(_ query: OutcomeQuery) async throws -> OutcomeTotals

    /// The rows `offset..<offset + limit` of the window's report ordered by signatures issued (most first), each with
    /// the report's figures, and how many rows the report has: its figures computed for the page's apps only.
    func outcomePage(_ query: OutcomeQuery, limit: Int, offset: Int) async throws -> OutcomePage

    /// Every UTC day the window touches (the first and last cut to it), in order: signatures issued and redemptions,
    /// every offer added up, from the daily rollups (the log for a day cut by the window) and the redemptions' index.
    func dailyOutcomeTotals(_ query: OutcomeQuery) async throws -> [DailyOutcomeTotals]

    /// Appends an audit event.
    func appendAudit(_ event: AuditEvent) async throws

    /// Audit events, newest first.
    func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent]

    /// Audit events at or after `since` and before `until` (`nil`: no bound), of these actions only (`nil`: every
    /// action; none: no event), newest first.
    func auditEvents(limit: Int, since: Date?, until: Date?, actions: Set<String>?) async throws -> [AuditEvent]

    /// A small named document shared by every replica (key states set by admins), with its version, or `nil`.
    func document(named name: String) async throws -> StoredDocument?

    /// Saves a named document durably by compare-and-set: only if its stored version is `version - 1` (a
    /// document never saved counts as version 0). Never a blind overwrite.
    /// - Returns: `false`, writing nothing, when another writer saved a different version first.
    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool

    /// Records a customer's exposure to an experiment unless one is recorded already (the first wins).
    /// - Returns: whether this call recorded it.
    @discardableResult
    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool

    /// The customers exposed to an experiment, by variant name.
    func exposureCounts(experimentIdentifier: String) async throws -> [String: Int]

    /// Each variant's exposed customers and, of those whose window is mature, what they did within it: redeemed one
    /// of the variant's offers (and renewed after it), converted, retained, realized revenue (docs/experiments.md).
    func experimentOutcomes(_ query: ExperimentOutcomeQuery) async throws -> [String: ExperimentVariantOutcome]

    /// Records a subscription's transaction, offer or not (an experiment's metrics read them); a transaction
    /// recorded before gains what is new (its refund), nothing else changes.
    func recordTransaction(_ transaction: SubscriptionTransaction) async throws

    /// Adds a decision to the decision log through a batched writer (one transaction a batch), without waiting:
    /// the answer never waits for it. A batch that fails is written again for a few seconds, then logged, counted
    /// (`offer_signer_decision_log_dropped_total`) and lost (docs/store.md "The decision log").
    func logDecision(_ decision: PolicyDecisionRecord)

    /// Returns once every decision logged so far is written (or has failed).
    func flushDecisionLog() async

    /// The logged decisions about the apps `bundleIdentifiers` with `since <= decidedAt < until` (Unix ms), oldest
    /// first, after `cursor`, at most `limit` (1 to 10,000) — without their snapshots (``PolicyDecisionRecord/factsSnapshot``
    /// is empty): a replay reads each distinct snapshot once (``decisionSnapshots(hashes:)``).
    func policyDecisions(
        bundleIdentifiers: [String],
        since: Int64,
        until: Int64,
        after cursor: PolicyDecisionCursor?,
        limit: Int
    ) async throws -> [PolicyDecisionRecord]

    /// The facts snapshots with these hashes (at most 10,000), by hash.
    func decisionSnapshots(hashes: [String]) async throws -> [String: String]

    /// The logged decisions about one customer of an app (by the log's keyed hash, ``PolicyDecisionRecord/customerHash``)
    /// made since `since` (Unix ms), newest first, at most `limit` (1 to 1,000), without their snapshots. The log has
    /// no index on the customer: the window bounds what is read.
    func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord]

    /// The redemptions filed under a customer or about one of `originalTransactionIds` (at most 100 are read), and
    /// the retention answers given about those transactions, newest first, at most `limit` (1 to 1,000) of each.
    func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes

    /// Deletes the decisions made before `before` and the snapshots no later decision uses.
    /// - Returns: how many decisions went.
    func purgeDecisionLog(before: Date) async throws -> Int

    /// Checks that the store answers (for `/readyz`).
    func ping() async throws

    /// Flushes what is queued and closes connections.
    func close() async throws

    /// Rate limits every replica on this store shares (PostgreSQL), or `nil` where one process serves the store (a
    /// SQLite file, memory): its own limits are then the fleet's.
    var sharedLimits: (any SharedLimitStore)? { get }
}

extension OfferStore {
    /// A store without connections to open has nothing to warm.
    public func warmUp() async {}
    /// A store without a decision log keeps nothing.
    public func logDecision(_ decision: PolicyDecisionRecord) {}
    public func flushDecisionLog() async {}
    public func policyDecisions(
        bundleIdentifiers: [String],
        since: Int64,
        until: Int64,
        after cursor: PolicyDecisionCursor?,
        limit: Int
    ) async throws -> [PolicyDecisionRecord] { [] }
    public func purgeDecisionLog(before: Date) async throws -> Int { 0 }
    public func decisionSnapshots(hashes: [String]) async throws -> [String: String] { [:] }
    public func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord] {
        []
    }
    /// A store no other process shares shares no limits.
    public var sharedLimits: (any SharedLimitStore)? { nil }
    /// A store no other process shares has no one else's changes to tell.
    public func documentChanges() -> AsyncStream<String> { AsyncStream { $0.finish() } }
    /// A store without outcomes knows none.
    public func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes {
        CustomerOutcomes()
    }
}

extension OfferStore {
    /// ``updateCustomer(_:claiming:_:)`` claiming no transaction (flags, grants, storefront).
    @discardableResult
    public func updateCustomer(_ key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        try await updateCustomer(key, claiming: [], body)
    }

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

    /// ``applyNotification(notificationUUID:to:claiming:_:)`` claiming no transaction.
    public func applyNotification(
        notificationUUID: String,
        to key: CustomerKey,
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> Bool {
        try await applyNotification(notificationUUID: notificationUUID, to: key, claiming: [], body)
    }

    /// ``withCustomerTransaction(_:issuedSince:answerKey:_:)`` without an idempotency key.
    public func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        try await withCustomerTransaction(key, issuedSince: since, answerKey: nil, body)
    }
}

/// An original transaction that a write of customer facts files under its customer: the claim that makes the
/// customer its one owner. Keyed by (app, App Store environment, original transaction identifier); the customer's
/// app is the key's bundle identifier.
///
/// The first claim wins and is kept (table `transaction_owners`). The claim is one statement inside the write's
/// transaction (an insert that does nothing on conflict, then a read of the owner): two customers claiming one
/// transaction at the same instant — on one process or on replicas sharing PostgreSQL — serialize on its row, and
/// the second sees the first's owner and is refused.
public struct TransactionClaim: Sendable, Hashable {
    /// The App Store environment of the transaction (`Production`, `Sandbox`, …).
    public var environment: String
    public var originalTransactionId: String
    /// The one other owner this claim may take the transaction from (an `applicationUsername`): the internal key a
    /// subscription no account had claimed was filed under, when the transaction's own `appAccountToken` names the
    /// claimant. `nil`: no owner but the claimant itself is accepted.
    public var replacing: String?

    public init(environment: String, originalTransactionId: String, replacing: String? = nil) {
        self.environment = environment
        self.originalTransactionId = originalTransactionId
        self.replacing = replacing
    }
}

/// A named document as stored, with the version its last compare-and-set gave it.
public struct StoredDocument: Sendable, Hashable {
    /// The document.
    public var text: String
    /// Its version (0 for a document written before versions existed).
    public var version: Int64

    public init(text: String, version: Int64) {
        self.text = text
        self.version = version
    }
}

/// The one error type of the store. Messages never contain passwords or connection strings with them.
public struct OfferStoreError: CodedError, Hashable, Sendable, CustomStringConvertible {

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}

/// Runs its argument once its caller has recorded what it has at hand (``OfferStore/record(_:startWhenReady:completion:)``).
public typealias StartWhenReady = @Sendable (_ start: @escaping @Sendable () -> Void) -> Void

extension OfferStore {
    /// Records an issued signature and returns once the record is durable (``record(_:startWhenReady:completion:)``).
    /// - Throws: ``OfferStoreError`` `duplicateNonce` when the nonce was recorded before.
    public func record(_ signature: IssuedSignature) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            record(signature, startWhenReady: nil) { continuation.resume(with: $0) }
        }
    }
}

extension OfferStoreError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: ErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case unavailable = "store_unavailable"
            case invalidDatabaseURL = "invalid_database_url"
            case migrationFailed = "migration_failed"
            case duplicateNonce = "duplicate_nonce"
            case corruptRecord = "corrupt_record"
            case transactionClaimed = "transaction_claimed"
            case storeInUse = "store_in_use"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        public var rawValue: String { kind.rawValue }

        /// The database cannot be reached or refused the operation.
        public static let unavailable = Self(.unavailable)

        /// `OFFER_SIGNER_DATABASE_URL` is not a `sqlite:` or `postgres://` URL.
        public static let invalidDatabaseURL = Self(.invalidDatabaseURL)

        /// A migration failed.
        public static let migrationFailed = Self(.migrationFailed)

        /// The nonce of an issued signature was recorded before.
        public static let duplicateNonce = Self(.duplicateNonce)

        /// A stored record could not be decoded.
        public static let corruptRecord = Self(.corruptRecord)

        /// An original transaction a write claimed is another customer's (``TransactionClaim``); nothing was written.
        public static let transactionClaimed = Self(.transactionClaimed)

        /// Another `offer-signer serve` holds the SQLite file (``SQLiteFileLock``).
        public static let storeInUse = Self(.storeInUse)
    }
}
