import Crypto
import Foundation

/// An App Store Connect subscription key: the P-256 private key that signs promotional offers, with its
/// key identifier.
///
/// ## Usage
///
/// ```swift
/// let pem = try String(contentsOfFile: "SubscriptionKey_ABC123DEFG.p8", encoding: .utf8)
/// let key = try SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: pem)
/// print(key.fingerprint)          // SHA-256 of the public key's SubjectPublicKeyInfo, hex
/// ```
///
/// PKCS#8 (`BEGIN PRIVATE KEY`, Apple's `.p8`) and SEC1 (`BEGIN EC PRIVATE KEY`) PEM are accepted. Anything
/// else — RSA, another curve, an encrypted key, a public key — is refused with an ``OfferSigningError`` that
/// names the key identifier and never contains key material. `description` never prints the key either.
public struct SigningKey: Sendable, CustomStringConvertible {
    /// The key identifier App Store Connect gave the key (the `<KEYID>` of `SubscriptionKey_<KEYID>.p8`).
    public let keyIdentifier: String
    /// The private key. Never logged, never serialised by the service.
    public let privateKey: P256.Signing.PrivateKey
    /// The public half, used to self-verify every signature and published at `GET /v1/keys`.
    public let verificationKey: VerificationKey

    /// The SHA-256 of the public key's DER SubjectPublicKeyInfo, lower-case hex.
    public var fingerprint: String { verificationKey.fingerprint }
    /// The public key.
    public var publicKey: P256.Signing.PublicKey { verificationKey.publicKey }

    /// Wraps a private key already in memory.
    /// - Throws: ``OfferSigningError`` `invalidKey` if `keyIdentifier` is not a valid key identifier.
    public init(keyIdentifier: String, privateKey: P256.Signing.PrivateKey) throws(OfferSigningError) {
        guard KeyIdentifier.isValid(keyIdentifier) else {
            throw OfferSigningError(
                .invalidKey,
                """
                Key identifier '\(keyIdentifier.prefix(80))' is not valid: use 1 to \(KeyIdentifier.maximumLength) letters, digits or '_' (App \
                Store Connect's are 10 characters, such as ABC123DEFG).
                """
            )
        }
        self.keyIdentifier = keyIdentifier
        self.privateKey = privateKey
        self.verificationKey = VerificationKey(keyIdentifier: keyIdentifier, publicKey: privateKey.publicKey)
    }

    /// Reads a PEM private key (PKCS#8 or SEC1, P-256).
    ///
    /// A PEM given on one line with literal `\n` sequences (as some secret stores and `.env` files hold it)
    /// is accepted too.
    /// - Parameters:
    ///   - keyIdentifier: the App Store Connect key identifier.
    ///   - pemRepresentation: the PEM text.
    ///   - source: where the key came from, for error messages (`OFFER_SIGNER_KEY_ABC123DEFG`, a path, …).
    /// - Throws: ``OfferSigningError`` with code `invalidKey`, naming the key identifier and saying what is
    ///   wrong; never echoing the key.
    public init(keyIdentifier: String, pemRepresentation: String, source: String? = nil) throws(OfferSigningError) {
        let origin = source.map { " (from \($0))" } ?? ""
        func refuse(_ problem: String) -> OfferSigningError {
            OfferSigningError(.invalidKey, "Key \(keyIdentifier)\(origin) \(problem)")
        }
        var pem = pemRepresentation.trimmingCharacters(in: .whitespacesAndNewlines)
        if !pem.contains("\n"), pem.contains("\\n") {
            pem = pem.replacingOccurrences(of: "\\n", with: "\n")
        }
        guard let label = Self.pemLabel(of: pem) else {
            throw refuse(
                "is not a PEM document: expected the contents of the .p8 file App Store Connect gave you, whose first line reads BEGIN PRIVATE KEY."
            )
        }
        switch label {
        case "PRIVATE KEY", "EC PRIVATE KEY":
            if pem.contains("Proc-Type: 4,ENCRYPTED") {
                throw refuse("is encrypted; the service needs the unencrypted key as App Store Connect delivers it.")
            }
            let privateKey: P256.Signing.PrivateKey
            do {
                privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
            } catch {
                if (try? P384.Signing.PrivateKey(pemRepresentation: pem)) != nil {
                    throw refuse("is on curve P-384; App Store subscription keys are EC P-256 (prime256v1).")
                }
                if (try? P521.Signing.PrivateKey(pemRepresentation: pem)) != nil {
                    throw refuse("is on curve P-521; App Store subscription keys are EC P-256 (prime256v1).")
                }
                throw refuse(
                    "is not an EC P-256 private key (an RSA key, another algorithm or a damaged file?); App Store subscription keys are EC P-256."
                )
            }
            try self.init(keyIdentifier: keyIdentifier, privateKey: privateKey)
        case "ENCRYPTED PRIVATE KEY":
            throw refuse("is encrypted; the service needs the unencrypted key as App Store Connect delivers it.")
        case "RSA PRIVATE KEY":
            throw refuse("is an RSA key; App Store subscription keys are EC P-256.")
        case "PUBLIC KEY", "EC PUBLIC KEY":
            throw refuse("is a public key; the service needs the private key (the .p8 file).")
        case "CERTIFICATE":
            throw refuse("is a certificate; the service needs the private key (the .p8 file).")
        default:
            throw refuse("is a PEM '\(label.prefix(40))' document, not a private key; expected a BEGIN PRIVATE KEY document.")
        }
    }

    /// Generates a fresh P-256 key, for tests and `serve --demo`. Not accepted by the App Store.
    public static func generate(keyIdentifier: String) throws(OfferSigningError) -> SigningKey {
        try SigningKey(keyIdentifier: keyIdentifier, privateKey: P256.Signing.PrivateKey())
    }

    /// The private key as PKCS#8 PEM, the format of App Store Connect's `.p8` files.
    public var pkcs8PEMRepresentation: String { privateKey.pemRepresentation }

    public var description: String { "SigningKey(\(keyIdentifier), fingerprint: \(fingerprint))" }

    static func pemLabel(of pem: String) -> String? {
        guard let begin = pem.range(of: "-----BEGIN ") else { return nil }
        guard let end = pem.range(of: "-----", range: begin.upperBound..<pem.endIndex) else { return nil }
        guard pem.range(of: "-----END ", range: end.upperBound..<pem.endIndex) != nil else { return nil }
        return String(pem[begin.upperBound..<end.lowerBound])
    }
}
