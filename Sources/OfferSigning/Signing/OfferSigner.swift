import Crypto
import Foundation

/// Signs promotional offers and checks every signature before it leaves.
///
/// ## Usage
///
/// ```swift
/// let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: p8)
/// let offer = PromotionalOffer(bundleIdentifier: "com.example.app", productIdentifier: "com.example.monthly",
///                              offerIdentifier: "winback_50", applicationUsername: "8C1D…")
/// let bundle = try OfferSigner.signLegacy(offer, with: key)
/// // bundle.signature: base64 DER ECDSA over the U+2063-joined payload; verified with key.publicKey already.
/// ```
///
/// No I/O and no HTTP: the nonce and the timestamp can be passed in, which makes signatures reproducible in
/// everything but the ECDSA randomness.
public enum OfferSigner {
    /// The current Unix time in milliseconds.
    public static func currentTimestamp(_ now: Date = Date()) -> Int64 {
        Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// Signs a legacy promotional offer (docs/design.md §1.1) and self-verifies the signature.
    ///
    /// - Parameters:
    ///   - offer: what to sign; validated first.
    ///   - key: the signing key; its key identifier goes into the payload.
    ///   - nonce: a fresh version-4 UUID (the default); written lower-case.
    ///   - timestamp: Unix time in milliseconds (default: now).
    /// - Returns: the bundle StoreKit needs; `applicationUsername` exactly as signed (lower-cased).
    /// - Throws: ``OfferSigningError`` `invalidField` for a field that cannot be signed;
    ///   `selfCheckFailed` if the signature does not verify with the key's own public key (the bundle is then
    ///   never returned).
    public static func signLegacy(
        _ offer: PromotionalOffer,
        with key: SigningKey,
        nonce: UUID = .randomVersion4(),
        timestamp: Int64 = currentTimestamp()
    ) throws(OfferSigningError) -> SignedLegacyOffer {
        try signLegacy(offer, with: key, nonce: nonce, timestamp: timestamp, selfCheckKey: key.publicKey)
    }

    /// The signing path with the self-check key as a parameter, so tests can prove a failed check is refused.
    static func signLegacy(
        _ offer: PromotionalOffer,
        with key: SigningKey,
        nonce: UUID,
        timestamp: Int64,
        selfCheckKey: P256.Signing.PublicKey
    ) throws(OfferSigningError) -> SignedLegacyOffer {
        try offer.validate()
        guard timestamp > 0 else {
            throw .invalidField("timestamp", "timestamp must be a positive Unix time in milliseconds.")
        }
        let payload = LegacyOfferPayload(
            offer: offer,
            keyIdentifier: key.keyIdentifier,
            nonce: nonce.lowercasedString,
            timestamp: timestamp
        )
        // Hashed once for both: signing and verifying `bytes` hash them with SHA-256 first.
        let digest = SHA256.hash(data: payload.bytes)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try key.privateKey.signature(for: digest)
        } catch {
            throw OfferSigningError(.selfCheckFailed, "Signing with key \(key.keyIdentifier) failed.")
        }
        guard selfCheckKey.isValidSignature(signature, for: digest) else {
            throw OfferSigningError(
                .selfCheckFailed,
                "The signature made with key \(key.keyIdentifier) did not verify with its public key; the bundle was not returned."
            )
        }
        return SignedLegacyOffer(
            bundleIdentifier: payload.bundleIdentifier,
            productIdentifier: payload.productIdentifier,
            offerIdentifier: payload.offerIdentifier,
            applicationUsername: payload.applicationUsername,
            keyIdentifier: payload.keyIdentifier,
            nonce: payload.nonce,
            timestamp: payload.timestamp,
            signature: Data(signature.derBytes).base64EncodedString()
        )
    }
}

extension P256.Signing.ECDSASignature {
    /// ``derRepresentation``, written from the raw `r ‖ s` without BoringSSL's encoder: SEQUENCE { INTEGER r,
    /// INTEGER s }, each integer in the fewest bytes, with a zero byte before a first byte whose high bit is set
    /// (compared with ``derRepresentation`` in `OfferSignerTests`).
    var derBytes: [UInt8] {
        let raw = [UInt8](rawRepresentation)
        guard raw.count == 64 else { return [UInt8](derRepresentation) }
        var der: [UInt8] = [0x30, 0]  // the sequence's length is set at the end (at most 70: one byte)
        der.reserveCapacity(72)
        for half in [raw[0..<32], raw[32..<64]] {
            var digits = half.drop { $0 == 0 }
            if digits.isEmpty { digits = half.suffix(1) }
            let pad = digits.first! & 0x80 != 0
            der.append(0x02)
            der.append(UInt8(digits.count + (pad ? 1 : 0)))
            if pad { der.append(0) }
            der.append(contentsOf: digits)
        }
        der[1] = UInt8(der.count - 2)
        return der
    }
}
