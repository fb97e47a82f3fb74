import Crypto
import Foundation

/// The public half of a subscription key: what verifies signatures, and all that the service ever publishes.
public struct VerificationKey: Sendable, Hashable {
    /// The App Store Connect key identifier.
    public let keyIdentifier: String
    /// The P-256 public key.
    public let publicKey: P256.Signing.PublicKey
    /// The SHA-256 of the public key's DER SubjectPublicKeyInfo, lower-case hex.
    public let fingerprint: String

    /// Wraps a public key.
    public init(keyIdentifier: String, publicKey: P256.Signing.PublicKey) {
        self.keyIdentifier = keyIdentifier
        self.publicKey = publicKey
        self.fingerprint = SHA256.hash(data: publicKey.derRepresentation).hexString
    }

    /// Reads a public key from PEM (`BEGIN PUBLIC KEY`), as `GET /v1/keys` publishes it.
    /// - Throws: ``OfferSigningError`` `invalidKey`.
    public init(keyIdentifier: String, publicKeyPEM: String) throws(OfferSigningError) {
        do {
            self.init(keyIdentifier: keyIdentifier, publicKey: try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM))
        } catch {
            throw OfferSigningError(
                .invalidKey,
                "Public key \(keyIdentifier) is not an EC P-256 public key in PEM (-----BEGIN PUBLIC KEY-----)."
            )
        }
    }

    /// The public key as PEM (SubjectPublicKeyInfo).
    public var pemRepresentation: String { publicKey.pemRepresentation }

    /// The public key as a JSON Web Key (RFC 7517/7518): `kty` EC, `crv` P-256, `x`, `y`, `kid`, `alg` ES256, `use` sig.
    public var jsonWebKey: [String: String] {
        let point = publicKey.x963Representation  // 0x04 || x || y
        let x = point.dropFirst().prefix(32)
        let y = point.dropFirst(33)
        return [
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": keyIdentifier,
            "x": Data(x).base64URLEncodedString(), "y": Data(y).base64URLEncodedString(),
        ]
    }

    public static func == (lhs: VerificationKey, rhs: VerificationKey) -> Bool {
        lhs.keyIdentifier == rhs.keyIdentifier && lhs.fingerprint == rhs.fingerprint
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(keyIdentifier)
        hasher.combine(fingerprint)
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal.
    package var hexString: String { Array(self).withUnsafeBytes { $0.hexString() } }
}

extension UnsafeRawBufferPointer {
    /// Lower-case hexadecimal of the first `count` bytes (all of them by default). Not generic, so a caller in
    /// another module runs it specialized (a digest's bytes on the decision path).
    package func hexString(prefix count: Int = .max) -> String {
        let length = Swift.min(count, self.count)
        return String(unsafeUninitializedCapacity: length * 2) { out in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { digits in
                for index in 0..<length {
                    out[2 * index] = digits[Int(self[index] >> 4)]
                    out[2 * index + 1] = digits[Int(self[index] & 0x0F)]
                }
            }
            return length * 2
        }
    }
}

extension Data {
    /// Base64url without padding (RFC 7515 §2).
    public func base64URLEncodedString() -> String {
        var text = base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}
