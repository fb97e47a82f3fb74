import SwiftASN1
public import X509

/// The root certificates signed App Store data may chain to, and how to load others.
///
/// By default a ``SignedDataVerifier`` trusts only Apple Root CA - G3, bundled here. Tests (and staging set-ups)
/// trust their own roots instead: a server reads the files named by `OFFER_SIGNER_TRUSTED_ROOTS` and passes their
/// bytes to ``certificate(pemOrDER:)``.
public enum TrustedRootCertificates {
    /// The SHA-256 fingerprint of the DER encoding of Apple Root CA - G3, upper-case hex.
    public static let appleRootCAG3SHA256Fingerprint = "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179"

    /// The bundled Apple Root CA - G3, PEM.
    public static var appleRootCAG3PEM: String { AppStoreNotifications.appleRootCAG3PEM }

    /// The bundled Apple Root CA - G3, parsed.
    ///
    /// - Returns: The certificate.
    /// - Throws: ``SignedDataVerificationError/Code/invalidConfiguration`` if the bundled PEM cannot be parsed
    ///   (it can: a test parses it and pins its fingerprint).
    public static func appleRootCAG3() throws(SignedDataVerificationError) -> Certificate {
        do {
            return try Certificate(pemEncoded: appleRootCAG3PEM)
        } catch {
            throw SignedDataVerificationError(
                .invalidConfiguration,
                "the bundled Apple Root CA - G3 does not parse; the binary is damaged, reinstall it"
            )
        }
    }

    /// Parses a root certificate from the contents of a `.pem` or `.cer`/`.der` file.
    ///
    /// - Parameter bytes: A PEM document (`-----BEGIN CERTIFICATE-----`) or the DER encoding of one certificate.
    /// - Returns: The certificate.
    /// - Throws: ``SignedDataVerificationError/Code/invalidConfiguration`` if the bytes are neither.
    public static func certificate(pemOrDER bytes: [UInt8]) throws(SignedDataVerificationError) -> Certificate {
        if let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN") {
            do {
                return try Certificate(pemEncoded: text)
            } catch {
                throw SignedDataVerificationError(
                    .invalidConfiguration,
                    "not a PEM certificate: the text between -----BEGIN CERTIFICATE----- and -----END CERTIFICATE----- is not one X.509 certificate"
                )
            }
        }
        do {
            return try Certificate(derEncoded: bytes)
        } catch {
            throw SignedDataVerificationError(
                .invalidConfiguration,
                "neither a PEM nor a DER certificate: give the root as Apple publishes it (AppleRootCA-G3.cer) or as PEM"
            )
        }
    }
}
