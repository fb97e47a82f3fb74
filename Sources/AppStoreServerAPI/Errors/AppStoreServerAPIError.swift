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
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<AppStoreServerAPIError>

}

extension ErrorCode where Domain == AppStoreServerAPIError {
    /// The App Store did not answer in time, answered with a server error, could not be reached, or kept failing
    /// until the retries or the time budget ran out. Try again later.
    public static var appStoreUnavailable: Self { Self("app_store_unavailable") }
    /// The App Store does not know the transaction (in any accepted environment), or the customer or app.
    public static var notFound: Self { Self("not_found") }
    /// The App Store refused the authentication token (HTTP 401): the key ID, issuer ID, bundle ID or key is
    /// wrong, or the key was revoked.
    public static var unauthorized: Self { Self("unauthorized") }
    /// The answer could not be decoded, was too large, or a signed item in it failed verification (untrusted
    /// chain, wrong bundle, wrong environment). Nothing of such an answer is used.
    public static var invalidResponse: Self { Self("invalid_response") }
    /// The transaction identifier is not one the App Store could have issued (digits only, bounded length), or
    /// the App Store said so (error 4000006).
    public static var invalidTransactionIdentifier: Self { Self("invalid_transaction_identifier") }
    /// The App Store's rate limit (HTTP 429) or this client's own limit left no time within the budget.
    public static var rateLimited: Self { Self("rate_limited") }
    /// The App Store refused the request as malformed (HTTP 400 other than an invalid transaction identifier).
    public static var invalidRequest: Self { Self("invalid_request") }
    /// The client's configuration is unusable: an unreadable key, an empty identifier, no environment.
    /// Thrown by the initialiser, not by requests.
    public static var invalidConfiguration: Self { Self("invalid_configuration") }
}
