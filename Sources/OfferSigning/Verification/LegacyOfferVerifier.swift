import Crypto
import Foundation

/// The outcome of verifying a legacy bundle, with what was checked.
public struct LegacyOfferVerification: Sendable, Hashable, Codable {
    /// Whether the signature is good for the payload under a key the service knows and has not revoked.
    public var valid: Bool
    /// Why not, as a code: `unknown_key`, `key_revoked`, `malformed_signature`, `signature_mismatch`,
    /// `invalid_field`. `nil` when valid.
    public var reason: String?
    /// A sentence for humans about `reason`.
    public var message: String?
    /// The key the bundle names.
    public var keyIdentifier: String
    /// That key's state, if the service knows it.
    public var keyState: KeyState?
    /// The exact payload checked, separators shown as `\u2063`.
    public var payload: String
    /// Whether the App Store still accepts the bundle: `current` (less than 24 hours old), `expired`, or
    /// `future` (timestamp more than 5 minutes ahead of this service's clock). Reported, never fatal.
    public var validityWindow: String
    /// Notes that do not make the bundle invalid, such as an `applicationUsername` that is not lower-case.
    public var warnings: [String]
}

/// Verifies legacy bundles with the keys of a ``KeyRing``, retired ones included.
public enum LegacyOfferVerifier {
    /// How long the App Store accepts a signature after its timestamp.
    public static let validityMilliseconds: Int64 = 24 * 60 * 60 * 1000

    /// Verifies `bundle`.
    /// - Parameters:
    ///   - bundle: the fields of a legacy sign response (its `format` is not read).
    ///   - keyRing: the keys to verify with; a revoked key makes the bundle invalid.
    ///   - now: the time to judge the 24-hour window against.
    public static func verify(_ bundle: SignedLegacyOffer, keyRing: KeyRing, now: Date = Date()) -> LegacyOfferVerification {
        let key = keyRing.verificationKey(for: bundle.keyIdentifier)
        return verify(bundle, key: key, keyState: keyRing.state(of: bundle.keyIdentifier), now: now)
    }

    /// Verifies `bundle` with one public key (a support tool holding only `GET /v1/keys` output).
    public static func verify(
        _ bundle: SignedLegacyOffer,
        key: VerificationKey?,
        keyState: KeyState? = nil,
        now: Date = Date()
    ) -> LegacyOfferVerification {
        let payload = bundle.payload
        var result = LegacyOfferVerification(
            valid: false,
            reason: nil,
            message: nil,
            keyIdentifier: bundle.keyIdentifier,
            keyState: keyState,
            payload: payload.displayString,
            validityWindow: window(of: bundle.timestamp, now: now),
            warnings: []
        )
        if bundle.applicationUsername != bundle.applicationUsername.lowercased() {
            result.warnings.append(
                "applicationUsername is not lower-case: the signature covers its lower-cased form, and StoreKit must be given that exact string."
            )
        }
        if bundle.nonce != bundle.nonce.lowercased() {
            result.warnings.append("nonce is not lower-case: the signature covers its lower-cased form.")
        }
        func fail(_ reason: String, _ message: String) -> LegacyOfferVerification {
            result.reason = reason
            result.message = message
            return result
        }
        do {
            try bundle.offer.validate()
        } catch {
            return fail("invalid_field", error.message)
        }
        guard OfferTimestamp.millisecondRange.contains(bundle.timestamp) else {
            return fail("invalid_field", "timestamp must be Unix time in milliseconds, between 0 and 253402300799999 (year 9999).")
        }
        if keyState == .revoked {
            return fail("key_revoked", "Key \(bundle.keyIdentifier) is revoked: its signatures are no longer valid.")
        }
        guard let key, key.keyIdentifier == bundle.keyIdentifier else {
            return fail("unknown_key", "No key \(bundle.keyIdentifier) is known to this service.")
        }
        guard let der = Data(base64Encoded: bundle.signature),
            let signature = try? P256.Signing.ECDSASignature(derRepresentation: der)
        else {
            return fail("malformed_signature", "signature is not a base64 DER ECDSA signature.")
        }
        guard key.publicKey.isValidSignature(signature, for: payload.bytes) else {
            return fail(
                "signature_mismatch",
                """
                The signature does not match this payload under key \(bundle.keyIdentifier); compare the payload field by field with what was \
                signed.
                """
            )
        }
        result.valid = true
        return result
    }

    static func window(of timestamp: Int64, now: Date) -> String {
        OfferTimestamp.window(of: timestamp, now: now)
    }
}
