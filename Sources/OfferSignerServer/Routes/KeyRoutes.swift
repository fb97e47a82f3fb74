import Hummingbird
import OfferApplication
import OfferKeys
import OfferSigning

/// One key as `GET /v1/keys` publishes it: public material only.
struct PublicKeyDescription: Codable, Sendable {
    var keyIdentifier: String
    var state: KeyState
    var fingerprint: String
    var publicKeyPEM: String
}

struct JSONWebKeySet: ResponseEncodable {
    var keys: [[String: String]]
}

/// `GET /v1/keys` and `GET /.well-known/jwks.json`.
struct KeyRoutes<Context: RequestContext> {
    let keys: KeyRingHolder

    func register(on router: Router<Context>) {
        router.get("/v1/keys") { request, context -> Response in
            let ring = keys.current
            let keys =
                ring.entries.map { entry in
                    PublicKeyDescription(
                        keyIdentifier: entry.key.keyIdentifier,
                        state: ring.state(of: entry.key.keyIdentifier) ?? .retired,
                        fingerprint: entry.key.fingerprint,
                        publicKeyPEM: entry.key.verificationKey.pemRepresentation
                    )
                }
                + ring.revokedKeysNotLoaded.map { key in
                    // Still published as revoked after its file is removed: a client holding its signatures learns why.
                    PublicKeyDescription(
                        keyIdentifier: key.keyIdentifier,
                        state: .revoked,
                        fingerprint: key.fingerprint,
                        publicKeyPEM: key.pemRepresentation
                    )
                }
            return try context.responseEncoder.encode(keys, from: request, context: context)
        }
        router.get("/.well-known/jwks.json") { _, _ -> JSONWebKeySet in
            let ring = keys.current
            return JSONWebKeySet(keys: ring.entries.filter { ring.state(of: $0.key.keyIdentifier) != .revoked }.map(\.key.verificationKey.jsonWebKey))
        }
    }
}
