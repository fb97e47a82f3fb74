import Foundation
import OfferEligibility
import OfferErrors

/// The one error type of the request pipeline (``OfferService``, ``NotificationIngestor``): a code, a sentence
/// that says what to do, and the request field or the eligibility reasons it concerns. No HTTP here: the edge
/// maps it once (the server's `APIError`). Messages never contain key material or tokens.
public struct OfferServiceError: CodedError, Hashable, Sendable, CustomStringConvertible {
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<OfferServiceError>

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

extension ErrorCode where Domain == OfferServiceError {
    /// A request field is missing or not acceptable (`field` names it).
    public static var invalidRequest: Self { Self("invalid_request") }
    /// The app is not served.
    public static var unknownApp: Self { Self("unknown_app") }
    /// The policy lists no such product.
    public static var unknownProduct: Self { Self("unknown_product") }
    /// The policy lists no such offer.
    public static var unknownOffer: Self { Self("unknown_offer") }
    /// The rules say no (`reasons` says why).
    public static var notEligible: Self { Self("not_eligible") }
    /// The customer store or the issued-signature log cannot be used; nothing was signed.
    public static var storeUnavailable: Self { Self("store_unavailable") }
    /// JWS signatures need the app's issuer ID, which is not configured.
    public static var issuerNotConfigured: Self { Self("issuer_not_configured") }
    /// No client credential, or one that does not verify (expired, unknown, malformed).
    public static var unauthorized: Self { Self("unauthorized") }
    /// A login JWT acts for one customer; the request named another.
    public static var customerMismatch: Self { Self("customer_mismatch") }
    /// A signed transaction without an appAccountToken whose original transaction another customer has
    /// already claimed.
    public static var transactionClaimed: Self { Self("transaction_claimed") }
    /// A `transactionId` no verified App Store data links to a customer of this app.
    public static var unknownTransaction: Self { Self("unknown_transaction") }
    /// An App Store `signedPayload` did not verify.
    public static var invalidSignedPayload: Self { Self("invalid_signed_payload") }
    /// The policy has no retention answer for this product (or none whose rules hold, and no fallback): the
    /// App Store shows its default message.
    public static var noRetentionAnswer: Self { Self("no_retention_answer") }
    /// A retention request reused a `requestIdentifier` already answered for another original transaction or
    /// product: the stored answer belongs to that request and is not given to this one.
    public static var requestIdentifierConflict: Self { Self("request_identifier_conflict") }
    /// A retention request was not decided within the deadline and there is no fallback message to give.
    public static var retentionTimedOut: Self { Self("retention_timed_out") }
    /// The store does not know the customer's subscription and the App Store Server API could not be asked in
    /// time (or gave no usable answer); the policy's `appStoreUnavailable: refuse` says not to decide without it.
    public static var appStoreUnavailable: Self { Self("app_store_unavailable") }
    /// An App Store refresh was asked for an app without an App Store Server API key
    /// (`OFFER_SIGNER_APP_STORE_API_KEY_ID`).
    public static var appStoreNotConfigured: Self { Self("app_store_api_not_configured") }
    /// A `signedTransaction` was sent to a service that cannot verify App Store data: it has no customer store, or
    /// no app is configured to receive App Store data. A retry cannot help; the request without `signedTransaction`
    /// can, or the configuration.
    public static var appStoreDataNotConfigured: Self { Self("app_store_data_not_configured") }
    /// The policy in force has no experiment by that id.
    public static var unknownExperiment: Self { Self("unknown_experiment") }
}
