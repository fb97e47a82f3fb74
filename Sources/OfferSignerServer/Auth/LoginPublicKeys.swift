import Crypto
import Foundation
import JWTKit
import OfferApplication

/// The public keys login JWTs are checked with (`OFFER_SIGNER_CLIENT_JWT_KEYS`): jwt-kit's collection, and the
/// algorithm each key is for, by `kid`, so that a token's header must name a key of the set and that key's
/// algorithm (RFC 7515 §4.1.1) before its signature is checked.
struct LoginPublicKeys: Sendable {
    /// The keys, as jwt-kit verifies with them.
    let collection: JWTKeyCollection
    /// `ES256` or `RS256` for each key, by `kid`; a PEM key, which has none, under `""`.
    let algorithms: [String: String]

    /// Reads a PEM public key (ES256 or RS256) or a JWK Set, of which the ES256 and RS256 signing keys are kept,
    /// each with its own `kid`.
    /// - Throws: ``ConfigurationError`` naming what is wrong; the file's contents are never repeated.
    static func load(_ path: String) async throws(ConfigurationError) -> LoginPublicKeys {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable: .clientJwtKeys)=\(path) cannot be read; point it at a PEM public key or a JWK Set file."
            )
        }
        let collection = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        let refused = ConfigurationError(
            .invalidConfiguration,
            "\(variable: .clientJwtKeys)=\(path) holds no ES256 or RS256 public key (a PEM \"PUBLIC KEY\" or a JWK Set with kid on each key)."
        )
        do {
            if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
                let usable: [[String: Any]]
                (usable, algorithms) = try Self.usableKeys(ofSet: data, path: path)
                let filtered = try JSONSerialization.data(withJSONObject: ["keys": usable])
                try await collection.add(jwksJSON: String(decoding: filtered, as: UTF8.self))
            } else if let key = try? ES256PublicKey(pem: text) {
                await collection.add(ecdsa: key)
                algorithms[""] = "ES256"
            } else {
                await collection.add(rsa: try Insecure.RSA.PublicKey(pem: text), digestAlgorithm: .sha256)
                algorithms[""] = "RS256"
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw refused
        }
        return LoginPublicKeys(collection: collection, algorithms: algorithms)
    }

    /// The keys of a JWK Set login tokens can be signed with, and the algorithm of each by `kid`: EC P-256 (ES256)
    /// and RSA (RS256) keys for signing; others — an encryption key (`use` other than `sig`), another curve or
    /// algorithm — are left out, as an identity provider's set often holds them. Each key needs a distinct `kid`.
    /// - Throws: ``ConfigurationError`` when the set is not one, a usable key has no `kid` or shares one, or none
    ///   is usable.
    private static func usableKeys(ofSet data: Data, path: String) throws(ConfigurationError) -> ([[String: Any]], [String: String]) {
        guard let set = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let keys = set["keys"] as? [[String: Any]] else {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable: .clientJwtKeys)=\(path) is not a JWK Set: a JSON object with a \"keys\" array of keys."
            )
        }
        var usable: [[String: Any]] = []
        var algorithms: [String: String] = [:]
        for (index, key) in keys.enumerated() {
            let algorithm: String
            switch (key["kty"] as? String, key["crv"] as? String) {
            case ("EC", "P-256"): algorithm = "ES256"
            case ("RSA", _): algorithm = "RS256"
            default: continue
            }
            if let use = key["use"] as? String, use != "sig" { continue }
            if let stated = key["alg"] as? String, stated != algorithm { continue }
            guard let kid = key["kid"] as? String, !kid.isEmpty else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable: .clientJwtKeys)=\(path): key \(index + 1) of the JWK Set has no kid; give each key one (a PEM file holds a \
                    single key without).
                    """
                )
            }
            guard algorithms[kid] == nil else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(variable: .clientJwtKeys)=\(path): two keys share the kid \(kid.prefix(64)); give each its own."
                )
            }
            algorithms[kid] = algorithm
            usable.append(key)
        }
        guard !usable.isEmpty else {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable: .clientJwtKeys)=\(path) holds no ES256 (EC P-256) or RS256 (RSA) signing key; login tokens are signed with one of those."
            )
        }
        return (usable, algorithms)
    }

    /// Refuses a token whose header does not name one of these keys and that key's algorithm: a `kid` of the set
    /// (any `kid`, or none, for a PEM key).
    func requireKey(alg: String, kid: String?) throws(OfferServiceError) {
        let keyAlgorithm: String?
        if let single = algorithms[""], algorithms.count == 1 {
            keyAlgorithm = single
        } else if let kid {
            keyAlgorithm = algorithms[kid]
        } else {
            throw OfferServiceError(
                .unauthorized,
                "The login token has no kid; with several keys in \(variable: .clientJwtKeys), a token names the key that signed it."
            )
        }
        guard let keyAlgorithm else {
            throw OfferServiceError(.unauthorized, "The login token's kid names no key of \(variable: .clientJwtKeys).")
        }
        guard keyAlgorithm == alg else {
            throw OfferServiceError(.unauthorized, "The login token says \(alg.prefix(10)), but the key it names is an \(keyAlgorithm) key.")
        }
    }
}
