import Foundation
import OfferErrors

/// Why a question to the App Store Server API got no usable answer.
///
/// One error type for every failure, in the style of swift-certificates' `CertificateError` and of
/// `SignedDataVerificationError`: compare ``code`` (tests do), show ``message`` to humans. Messages are plain
/// words: never a Swift type name, a token, key material or a transaction identifier.
///
/// The server maps the codes to HTTP once (what a caller may do next differs: ``Code/notFound`` is an answer,
/// ``Code/appStoreUnavailable`` and ``Code/rateLimited`` are "try later", the others are configuration or data
/// problems).
public struct AppStoreServerAPIError: CodedError, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public let code: Code

    /// A human-readable explanation.
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A human-readable explanation, without identifiers or secrets.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `"<code>: <message>"`.
}

extension AppStoreServerAPIError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case appStoreUnavailable = "app_store_unavailable"
            case notFound = "not_found"
            case unauthorized = "unauthorized"
            case invalidResponse = "invalid_response"
            case invalidTransactionIdentifier = "invalid_transaction_identifier"
            case rateLimited = "rate_limited"
            case invalidRequest = "invalid_request"
            case invalidConfiguration = "invalid_configuration"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The App Store did not answer in time, answered with a server error, could not be reached, or kept failing
        /// until the retries or the time budget ran out. Try again later.
        public static let appStoreUnavailable = Self(.appStoreUnavailable)

        /// The App Store does not know the transaction (in any accepted environment), or the customer or app.
        public static let notFound = Self(.notFound)

        /// The App Store refused the authentication token (HTTP 401): the key ID, issuer ID, bundle ID or key is
        /// wrong, or the key was revoked.
        public static let unauthorized = Self(.unauthorized)

        /// The answer could not be decoded, was too large, or a signed item in it failed verification (untrusted
        /// chain, wrong bundle, wrong environment). Nothing of such an answer is used.
        public static let invalidResponse = Self(.invalidResponse)

        /// The transaction identifier is not one the App Store could have issued (digits only, bounded length), or
        /// the App Store said so (error 4000006).
        public static let invalidTransactionIdentifier = Self(.invalidTransactionIdentifier)

        /// The App Store's rate limit (HTTP 429) or this client's own limit left no time within the budget.
        public static let rateLimited = Self(.rateLimited)

        /// The App Store refused the request as malformed (HTTP 400 other than an invalid transaction identifier).
        public static let invalidRequest = Self(.invalidRequest)

        /// The client's configuration is unusable: an unreadable key, an empty identifier, no environment.
        /// Thrown by the initialiser, not by requests.
        public static let invalidConfiguration = Self(.invalidConfiguration)
    }
}
