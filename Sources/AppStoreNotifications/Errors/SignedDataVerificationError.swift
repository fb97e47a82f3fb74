import Foundation
import OfferErrors

/// Why signed App Store data (a notification, a transaction, renewal info) was refused.
///
/// One error type for every refusal, in the style of swift-certificates' `CertificateError`: compare ``code``
/// (tests do), show ``message`` to humans. A server maps all of them to HTTP 400; ``Code/rawValue`` is snake_case so it
/// can go into the error body as it is.
public struct SignedDataVerificationError: CodedError, Hashable, Sendable, CustomStringConvertible {
    /// What kind of refusal this is.
    public let code: Code

    /// A human-readable explanation (no key material, no whole payloads).
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of refusal.
    ///   - message: A human-readable explanation.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `"<code>: <message>"`.
}

extension SignedDataVerificationError {
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<SignedDataVerificationError>

}

extension ErrorCode where Domain == SignedDataVerificationError {
    /// The verifier was configured wrongly: no trusted root, an unreadable root certificate, or Production
    /// accepted without an `appAppleId`. Thrown by initialisers, not by verification.
    public static var invalidConfiguration: Self { Self("invalid_configuration") }
    /// Not a compact JWS: not three base64url segments, or a header or payload that is not JSON.
    public static var invalidJWS: Self { Self("invalid_jws") }
    /// The header's `alg` is not `ES256`.
    public static var unsupportedAlgorithm: Self { Self("unsupported_algorithm") }
    /// The `x5c` header is missing, does not hold exactly three base64 DER certificates, or the chain breaks an
    /// RFC 5280 rule (basic constraints, key usage, …) or has a leaf key that is not P-256.
    public static var invalidCertificateChain: Self { Self("invalid_certificate_chain") }
    /// The chain does not lead to a configured trusted root, or the third `x5c` certificate is not that root.
    public static var untrustedRoot: Self { Self("untrusted_root") }
    /// The leaf lacks Apple's marker 1.2.840.113635.100.6.11.1, or the intermediate lacks 1.2.840.113635.100.6.2.1.
    public static var missingMarkerExtension: Self { Self("missing_marker_extension") }
    /// A certificate of the chain had expired at the payload's `signedDate`.
    public static var certificateExpired: Self { Self("certificate_expired") }
    /// A certificate of the chain was not yet valid at the payload's `signedDate`.
    public static var certificateNotYetValid: Self { Self("certificate_not_yet_valid") }
    /// The JWS signature does not verify with the leaf certificate's key (tampered header or payload).
    public static var invalidSignature: Self { Self("invalid_signature") }
    /// The payload's `bundleIdentifier` is not the configured app's.
    public static var wrongBundleId: Self { Self("wrong_bundle_id") }
    /// The payload's `environment` is missing or not one of the accepted environments.
    public static var wrongEnvironment: Self { Self("wrong_environment") }
    /// A Production notification's `appAppleId` is not the configured one.
    public static var wrongAppAppleId: Self { Self("wrong_app_apple_id") }
    /// The payload is signed correctly but does not decode as the expected type.
    public static var malformedPayload: Self { Self("malformed_payload") }
    /// The payload's `signedDate` is outside the window around now that the caller accepts (a real-time request
    /// too old or too new, a notification dated in the future), or its chain is not valid now.
    public static var notFresh: Self { Self("not_fresh") }
}
