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
    public init(code: Code, field: String? = nil, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// The stable codes of this error type.
    public typealias Code = ErrorCode<OfferSigningError>

    /// Convenience for an invalid request field.
    public static func invalidField(_ field: String, _ message: String) -> OfferSigningError {
        OfferSigningError(code: .invalidField, field: field, message: message)
    }
}

extension ErrorCode where Domain == OfferSigningError {
    /// A request field is empty, too long, or contains a character that cannot be signed.
    public static var invalidField: Self { Self("invalid_field") }
    /// A key could not be read: not PEM, not an EC P-256 private key, encrypted, or a wrong curve.
    public static var invalidKey: Self { Self("invalid_key") }
    /// Two sources define the same key identifier with different keys.
    public static var conflictingKey: Self { Self("conflicting_key") }
    /// No key with this key identifier is known.
    public static var unknownKey: Self { Self("unknown_key") }
    /// There is no key that may sign new offers.
    public static var noSigningKey: Self { Self("no_signing_key") }
    /// A signature made by the service did not verify with the public key of the key that made it.
    public static var selfCheckFailed: Self { Self("signature_self_check_failed") }
}
