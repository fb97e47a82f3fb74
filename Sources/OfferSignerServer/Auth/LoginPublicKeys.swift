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

    /// Reads a PEM public key (ES256 or RS256) or a JWK Set of EC P-256 and RSA keys, each with a `kid` when there
    /// are several.
    /// - Throws: ``ConfigurationError`` naming what is wrong; the file's contents are never repeated.
    static func load(_ path: String) async throws(ConfigurationError) -> LoginPublicKeys {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError("\(variable: .clientJwtKeys)=\(path) cannot be read; point it at a PEM public key or a JWK Set file.")
        }
        let collection = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        let refused = ConfigurationError("\(variable: .clientJwtKeys)=\(path) holds no ES256 or RS256 public key (a PEM \"PUBLIC KEY\" or a JWK Set with kid on each key).")
        do {
            if text.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
                algorithms = try Self.algorithms(ofSet: data, path: path)
                try await collection.add(jwksJSON: text)
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

    /// The algorithm of each key of a JWK Set, by `kid`: every key an EC P-256 (ES256) or RSA (RS256) key whose
    /// `alg`, when given, says so; at least one; a distinct `kid` on each when there are several.
    private static func algorithms(ofSet data: Data, path: String) throws(ConfigurationError) -> [String: String] {
        guard let set = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let keys = set["keys"] as? [[String: Any]] else {
            throw ConfigurationError("\(variable: .clientJwtKeys)=\(path) is not a JWK Set: a JSON object with a \"keys\" array of keys.")
        }
        guard !keys.isEmpty else {
            throw ConfigurationError("\(variable: .clientJwtKeys)=\(path) holds no key; a JWK Set needs at least one ES256 or RS256 public key.")
        }
        var algorithms: [String: String] = [:]
        for (index, key) in keys.enumerated() {
            let kid = key["kid"] as? String ?? ""
            let name = kid.isEmpty ? "key \(index + 1)" : "key \(kid.prefix(64))"
            let algorithm: String
            switch (key["kty"] as? String, key["crv"] as? String) {
            case ("EC", "P-256"): algorithm = "ES256"
            case ("RSA", _): algorithm = "RS256"
            default:
                throw ConfigurationError("\(variable: .clientJwtKeys)=\(path): \(name) is not an ES256 (EC P-256) or RS256 (RSA) public key; remove it, login tokens are signed with one of those.")
            }
            if let stated = key["alg"] as? String, stated != algorithm {
                throw ConfigurationError("\(variable: .clientJwtKeys)=\(path): \(name) says alg \(stated.prefix(16)), but it is an \(algorithm) key; login tokens are ES256 or RS256.")
            }
            guard keys.count == 1 || !kid.isEmpty, algorithms[kid] == nil else {
                throw ConfigurationError("\(variable: .clientJwtKeys)=\(path): with several keys, each needs its own kid (\(name) has \(kid.isEmpty ? "none" : "one already used")).")
            }
            algorithms[kid] = algorithm
        }
        return algorithms
    }

    /// Refuses a token whose header does not name one of these keys and that key's algorithm: a `kid` of the set
    /// (any `kid`, or none, for a single PEM key; none for a set of one key without `kid`).
    func requireKey(alg: String, kid: String?) throws(OfferServiceError) {
        let keyAlgorithm: String?
        if let single = algorithms[""], algorithms.count == 1 {
            keyAlgorithm = single
        } else if let kid {
            keyAlgorithm = algorithms[kid]
        } else {
            throw OfferServiceError(.unauthorized, "The login token has no kid; with several keys in \(variable: .clientJwtKeys), a token names the key that signed it.")
        }
        guard let keyAlgorithm else {
            throw OfferServiceError(.unauthorized, "The login token's kid names no key of \(variable: .clientJwtKeys).")
        }
        guard keyAlgorithm == alg else {
            throw OfferServiceError(.unauthorized, "The login token says \(alg.prefix(10)), but the key it names is an \(keyAlgorithm) key.")
        }
    }
}
