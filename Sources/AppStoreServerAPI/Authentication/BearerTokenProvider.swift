import Crypto
import Foundation

/// Signs the JSON Web Token the App Store Server API wants in `Authorization: Bearer …`, and reuses it until it
/// nears expiry.
///
/// Apple's recipe ("Generating JSON Web Tokens for API requests"): header `alg` ES256, `kid` the key ID, `typ`
/// JWT; claims `iss` issuer ID, `iat` and `exp` in UNIX seconds with `exp` at most 60 minutes after `iat`, `aud`
/// `appstoreconnect-v1`, `bid` the bundle ID; signed with the In-App Purchase key (P-256, ES256, the signature as
/// the 64-byte `r‖s`).
///
/// An actor whose methods never suspend: a check and a refresh happen in one turn, so concurrent callers share one
/// token and at most one is signed per refresh.
actor BearerTokenProvider {
    private let key: P256.Signing.PrivateKey
    private let keyIdentifier: String
    private let issuerId: String
    private let bundleIdentifier: String
    private let lifetime: Duration
    private let refreshMargin: Duration
    private var current: (token: String, expires: Date)?

    /// Reads the key; fails without repeating any of it.
    init(configuration: AppStoreServerAPIConfiguration) throws(AppStoreServerAPIError) {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM) else {
            throw AppStoreServerAPIError(
                .invalidConfiguration,
                "the In-App Purchase key is not a P-256 private key in PEM form (the .p8 file from App Store Connect)"
            )
        }
        guard !configuration.keyIdentifier.isEmpty, !configuration.issuerId.isEmpty, !configuration.bundleIdentifier.isEmpty else {
            throw AppStoreServerAPIError(.invalidConfiguration, "the key ID, issuer ID and bundle ID must not be empty")
        }
        guard configuration.tokenLifetime > .zero, configuration.tokenLifetime <= .seconds(3600),
            configuration.tokenRefreshMargin >= .zero, configuration.tokenRefreshMargin < configuration.tokenLifetime
        else {
            throw AppStoreServerAPIError(
                .invalidConfiguration,
                "the token lifetime must be at most 60 minutes and longer than the refresh margin"
            )
        }
        self.key = key
        self.keyIdentifier = configuration.keyIdentifier
        self.issuerId = configuration.issuerId
        self.bundleIdentifier = configuration.bundleIdentifier
        self.lifetime = configuration.tokenLifetime
        self.refreshMargin = configuration.tokenRefreshMargin
    }

    /// The token to send now: the current one while more than the refresh margin is left, else a new one.
    func token(now: Date = Date()) throws(AppStoreServerAPIError) -> String {
        if let current, current.expires.timeIntervalSince(now) > refreshMargin.timeInterval {
            return current.token
        }
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        let expires = issuedAt + Int64(lifetime.timeInterval.rounded(.down))
        let token = try sign(issuedAt: issuedAt, expires: expires)
        current = (token, Date(timeIntervalSince1970: TimeInterval(expires)))
        return token
    }

    /// Forgets the current token (after a 401), so the next request signs a new one.
    func invalidate() {
        current = nil
    }

    private func sign(issuedAt: Int64, expires: Int64) throws(AppStoreServerAPIError) -> String {
        let header = Header(alg: "ES256", kid: keyIdentifier, typ: "JWT")
        let claims = Claims(iss: issuerId, iat: issuedAt, exp: expires, aud: "appstoreconnect-v1", bid: bundleIdentifier)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let signingInput =
                try encoder.encode(header).base64URLEncodedString() + "."
                + encoder.encode(claims).base64URLEncodedString()
            let signature = try key.signature(for: Data(signingInput.utf8))
            return signingInput + "." + signature.rawRepresentation.base64URLEncodedString()
        } catch {
            throw AppStoreServerAPIError(.invalidConfiguration, "the authentication token could not be signed")
        }
    }

    private struct Header: Encodable {
        let alg: String
        let kid: String
        let typ: String
    }

    private struct Claims: Encodable {
        let iss: String
        let iat: Int64
        let exp: Int64
        let aud: String
        let bid: String
    }
}
