import Foundation
import OfferErrors
import OfferModel

/// The customer store and issued-signature log (docs/design.md §4): SQLite embedded by default, PostgreSQL when
/// several replicas share it. Both implementations pass one test suite. It is the sum of the store's capabilities
/// (Capabilities/); each use case of the application takes only those it uses.
public protocol OfferStore:
    StoreLifecycle, CustomerFactsStore, IssuedSignatureLog, StoredAnswers, ProcessedNotifications, OutcomeLog,
    OutcomeReports, ExperimentLog, AuditLog, SharedDocuments, ConsoleSessionStore, RetentionCatalogueStore,
    PolicyDecisionLog
{}

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

extension OfferStoreError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
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
