import Foundation
import OfferErrors

/// The one error type of the signing core.
///
/// Modelled on swift-certificates' `CertificateError`: a struct with an extensible ``Code``, compared in
/// tests by code, and a message for humans. A message never contains key material: it names the key by its
/// key identifier and where it came from, and says what to do.
public struct OfferSigningError: CodedError, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a stable, machine-readable code.
    public var code: Code
    /// The request field at fault, when the error is about one (`productIdentifier`, `nonce`, …).
    public var field: String?
    /// A sentence for humans that says what is wrong and what to do. Never contains key material.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String, field: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
    }

    /// Convenience for an invalid request field.
    public static func invalidField(_ field: String, _ message: String) -> OfferSigningError {
        OfferSigningError(.invalidField, message, field: field)
    }
}

extension OfferSigningError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidField = "invalid_field"
            case invalidKey = "invalid_key"
            case conflictingKey = "conflicting_key"
            case unknownKey = "unknown_key"
            case noSigningKey = "no_signing_key"
            case selfCheckFailed = "signature_self_check_failed"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// A request field is empty, too long, or contains a character that cannot be signed.
        public static let invalidField = Self(.invalidField)

        /// A key could not be read: not PEM, not an EC P-256 private key, encrypted, or a wrong curve.
        public static let invalidKey = Self(.invalidKey)

        /// Two sources define the same key identifier with different keys.
        public static let conflictingKey = Self(.conflictingKey)

        /// No key with this key identifier is known.
        public static let unknownKey = Self(.unknownKey)

        /// There is no key that may sign new offers.
        public static let noSigningKey = Self(.noSigningKey)

        /// A signature made by the service did not verify with the public key of the key that made it.
        public static let selfCheckFailed = Self(.selfCheckFailed)
    }
}
