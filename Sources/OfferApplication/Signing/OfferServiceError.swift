import Foundation
import OfferEligibility
import OfferErrors

/// The one error type of the request pipeline (``SigningPipeline``, ``NotificationIngestor``): a code, a sentence
/// that says what to do, and the request field or the eligibility reasons it concerns. No HTTP here: the edge
/// maps it once (the server's `APIError`). Messages never contain key material or tokens.
public struct OfferServiceError: CodedError, Hashable, Sendable, CustomStringConvertible {

    /// What kind of failure.
    public var code: Code
    /// What is wrong and what to do, for humans.
    public var message: String
    /// The request field at fault, for `invalidRequest`.
    public var field: String?
    /// Why a customer is not eligible, for `notEligible`.
    public var reasons: [EligibilityReason]?

    /// Creates an error.
    public init(_ code: Code, _ message: String, field: String? = nil, reasons: [EligibilityReason]? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.reasons = reasons
    }

    public var description: String { message }

    /// `invalid_request` naming a field.
    public static func invalidRequest(field: String, _ message: String) -> OfferServiceError {
        OfferServiceError(.invalidRequest, message, field: field)
    }

    /// `store_unavailable`: nothing was signed, or the signature was not returned.
    public static let storeUnavailable = OfferServiceError(
        .storeUnavailable,
        "The customer store is unavailable; no offer was signed. Try again shortly."
    )
}

extension OfferServiceError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidRequest = "invalid_request"
            case unknownApp = "unknown_app"
            case unknownProduct = "unknown_product"
            case unknownOffer = "unknown_offer"
            case notEligible = "not_eligible"
            case storeUnavailable = "store_unavailable"
            case issuerNotConfigured = "issuer_not_configured"
            case unauthorized = "unauthorized"
            case customerMismatch = "customer_mismatch"
            case transactionClaimed = "transaction_claimed"
            case unknownTransaction = "unknown_transaction"
            case invalidSignedPayload = "invalid_signed_payload"
            case noRetentionAnswer = "no_retention_answer"
            case requestIdentifierConflict = "request_identifier_conflict"
            case retentionTimedOut = "retention_timed_out"
            case appStoreUnavailable = "app_store_unavailable"
            case appStoreNotConfigured = "app_store_api_not_configured"
            case appStoreDataNotConfigured = "app_store_data_not_configured"
            case unknownExperiment = "unknown_experiment"
            case invalidPolicy = "invalid_policy"
            case policyConflict = "policy_conflict"
            case dryRunRunning = "dry_run_running"
            case dryRunNeedsFacts = "dry_run_needs_facts"
            case noPolicy = "no_policy"
            case policyNeedsStore = "policy_needs_store"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// A request field is missing or not acceptable (`field` names it).
        public static let invalidRequest = Self(.invalidRequest)

        /// The app is not served.
        public static let unknownApp = Self(.unknownApp)

        /// The policy lists no such product.
        public static let unknownProduct = Self(.unknownProduct)

        /// The policy lists no such offer.
        public static let unknownOffer = Self(.unknownOffer)

        /// The rules say no (`reasons` says why).
        public static let notEligible = Self(.notEligible)

        /// The customer store or the issued-signature log cannot be used; nothing was signed.
        public static let storeUnavailable = Self(.storeUnavailable)

        /// JWS signatures need the app's issuer ID, which is not configured.
        public static let issuerNotConfigured = Self(.issuerNotConfigured)

        /// No client credential, or one that does not verify (expired, unknown, malformed).
        public static let unauthorized = Self(.unauthorized)

        /// A login JWT acts for one customer; the request named another.
        public static let customerMismatch = Self(.customerMismatch)

        /// A signed transaction without an appAccountToken whose original transaction another customer has
        /// already claimed.
        public static let transactionClaimed = Self(.transactionClaimed)

        /// A `transactionId` no verified App Store data links to a customer of this app.
        public static let unknownTransaction = Self(.unknownTransaction)

        /// An App Store `signedPayload` did not verify.
        public static let invalidSignedPayload = Self(.invalidSignedPayload)

        /// The policy has no retention answer for this product (or none whose rules hold, and no fallback): the
        /// App Store shows its default message.
        public static let noRetentionAnswer = Self(.noRetentionAnswer)

        /// A retention request reused a `requestIdentifier` already answered for another original transaction or
        /// product: the stored answer belongs to that request and is not given to this one.
        public static let requestIdentifierConflict = Self(.requestIdentifierConflict)

        /// A retention request was not decided within the deadline and there is no fallback message to give.
        public static let retentionTimedOut = Self(.retentionTimedOut)

        /// The store does not know the customer's subscription and the App Store Server API could not be asked in
        /// time (or gave no usable answer); the policy's `appStoreUnavailable: refuse` says not to decide without it.
        public static let appStoreUnavailable = Self(.appStoreUnavailable)

        /// An App Store refresh was asked for an app without an App Store Server API key
        /// (`OFFER_SIGNER_APP_STORE_API_KEY_ID`).
        public static let appStoreNotConfigured = Self(.appStoreNotConfigured)

        /// A `signedTransaction` was sent to a service that cannot verify App Store data: it has no customer store, or
        /// no app is configured to receive App Store data. A retry cannot help; the request without `signedTransaction`
        /// can, or the configuration.
        public static let appStoreDataNotConfigured = Self(.appStoreDataNotConfigured)

        /// The policy in force has no experiment by that id.
        public static let unknownExperiment = Self(.unknownExperiment)

        /// The policy in the store, or one applied, does not read as a policy.
        public static let invalidPolicy = Self(.invalidPolicy)

        /// Policies applied at the same time kept winning the revision this one wanted.
        public static let policyConflict = Self(.policyConflict)

        /// Another policy dry-run is replaying on this replica (one at a time): try again later.
        public static let dryRunRunning = Self(.dryRunRunning)

        /// A dry-run's candidate has rules that read facts the decision log did not keep (the message names them).
        public static let dryRunNeedsFacts = Self(.dryRunNeedsFacts)

        /// The service has no policy, and what was asked needs one (a retention catalogue to set up).
        public static let noPolicy = Self(.noPolicy)

        /// A policy was applied at run time without the customer store every replica reads it from.
        public static let policyNeedsStore = Self(.policyNeedsStore)
    }
}
