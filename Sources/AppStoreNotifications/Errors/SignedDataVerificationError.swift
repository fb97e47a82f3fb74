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
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidConfiguration = "invalid_configuration"
            case invalidJWS = "invalid_jws"
            case unsupportedAlgorithm = "unsupported_algorithm"
            case invalidCertificateChain = "invalid_certificate_chain"
            case untrustedRoot = "untrusted_root"
            case missingMarkerExtension = "missing_marker_extension"
            case certificateExpired = "certificate_expired"
            case certificateNotYetValid = "certificate_not_yet_valid"
            case invalidSignature = "invalid_signature"
            case wrongBundleId = "wrong_bundle_id"
            case wrongEnvironment = "wrong_environment"
            case wrongAppAppleId = "wrong_app_apple_id"
            case malformedPayload = "malformed_payload"
            case notFresh = "not_fresh"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The verifier was configured wrongly: no trusted root, an unreadable root certificate, or Production
        /// accepted without an `appAppleId`. Thrown by initialisers, not by verification.
        public static let invalidConfiguration = Self(.invalidConfiguration)

        /// Not a compact JWS: not three base64url segments, or a header or payload that is not JSON.
        public static let invalidJWS = Self(.invalidJWS)

        /// The header's `alg` is not `ES256`.
        public static let unsupportedAlgorithm = Self(.unsupportedAlgorithm)

        /// The `x5c` header is missing, does not hold exactly three base64 DER certificates, or the chain breaks an
        /// RFC 5280 rule (basic constraints, key usage, …) or has a leaf key that is not P-256.
        public static let invalidCertificateChain = Self(.invalidCertificateChain)

        /// The chain does not lead to a configured trusted root, or the third `x5c` certificate is not that root.
        public static let untrustedRoot = Self(.untrustedRoot)

        /// The leaf lacks Apple's marker 1.2.840.113635.100.6.11.1, or the intermediate lacks 1.2.840.113635.100.6.2.1.
        public static let missingMarkerExtension = Self(.missingMarkerExtension)

        /// A certificate of the chain had expired at the payload's `signedDate`.
        public static let certificateExpired = Self(.certificateExpired)

        /// A certificate of the chain was not yet valid at the payload's `signedDate`.
        public static let certificateNotYetValid = Self(.certificateNotYetValid)

        /// The JWS signature does not verify with the leaf certificate's key (tampered header or payload).
        public static let invalidSignature = Self(.invalidSignature)

        /// The payload's `bundleIdentifier` is not the configured app's.
        public static let wrongBundleId = Self(.wrongBundleId)

        /// The payload's `environment` is missing or not one of the accepted environments.
        public static let wrongEnvironment = Self(.wrongEnvironment)

        /// A Production notification's `appAppleId` is not the configured one.
        public static let wrongAppAppleId = Self(.wrongAppAppleId)

        /// The payload is signed correctly but does not decode as the expected type.
        public static let malformedPayload = Self(.malformedPayload)

        /// The payload's `signedDate` is outside the window around now that the caller accepts (a real-time request
        /// too old or too new, a notification dated in the future), or its chain is not valid now.
        public static let notFresh = Self(.notFresh)
    }
}
