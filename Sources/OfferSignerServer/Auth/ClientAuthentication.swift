import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import NIOCore
import OfferApplication
import OfferSigning
import Synchronization

/// Who is calling `/v1/offers/*`, as the client credential says.
public enum ClientIdentity: Sendable, Hashable {
    /// The developer's backend, with an API key (`OFFER_SIGNER_API_KEYS`): it has authenticated its user
    /// itself and may name any customer.
    case apiKey(name: String)
    /// The app, with the developer's login JWT: it may act only for the customer the token names
    /// (lower-cased, as an `applicationUsername` is).
    case customer(String)
    /// No credential: the explicit open mode (`OFFER_SIGNER_CLIENT_AUTH=none`, `serve --demo`).
    case open

    /// The name used in logs and metrics: the API key's name, `jwt`, or `open`. Never a token or a customer.
    public var credentialName: String {
        switch self {
        case .apiKey(let name): name
        case .customer: "jwt"
        case .open: "open"
        }
    }

    /// The rate limit's bucket of this credential: an API key's name, a JWT's customer, or (open) the client's
    /// address.
    func rateLimitCredential(remoteAddress: SocketAddress?) -> String {
        switch self {
        case .apiKey(let name): "key:\(name)"
        case .customer(let customer): "jwt:\(customer)"
        case .open: "open:\(remoteAddress?.ipAddress ?? "unknown")"
        }
    }

    /// The customer a request acts for: the one it names, checked against a login JWT's customer (403
    /// `customer_mismatch` when they differ); a request that names none acts for the JWT's customer.
    /// - Throws: ``OfferServiceError``.
    public func customer(naming requested: String?) throws(OfferServiceError) -> String? {
        let named = requested.flatMap { $0.isEmpty ? nil : $0 }
        guard case .customer(let own) = self else { return named }
        guard let named else { return own }
        guard named.lowercased() == own else {
            throw OfferServiceError(
                .customerMismatch,
                """
                This login token acts for one customer only; applicationUsername names another. Leave applicationUsername out, or send the \
                signed-in customer's own.
                """,
                field: "applicationUsername"
            )
        }
        return own
    }
}

/// How `/v1/offers/*` callers authenticate (README "Securing it").
public struct ClientAuthConfiguration: Sendable {
    /// `OFFER_SIGNER_API_KEYS`.
    public var apiKeys: BearerTokens
    /// `OFFER_SIGNER_CLIENT_JWT_SECRET`: an HS256 secret for the developer's login JWTs.
    public var jwtSecret: String?
    /// `OFFER_SIGNER_CLIENT_JWT_KEYS`: a PEM public key (ES256 or RS256) or a JWK Set file.
    public var jwtKeysPath: String?
    /// `OFFER_SIGNER_CLIENT_JWT_ISSUER`: the `iss` login JWTs must carry, if set.
    public var issuer: String?
    /// `OFFER_SIGNER_CLIENT_JWT_AUDIENCE`: an `aud` login JWTs must contain, if set.
    public var audience: String?
    /// `OFFER_SIGNER_CLIENT_JWT_CUSTOMER_CLAIM`: the claim naming the customer (default `sub`).
    public var customerClaim: String
    /// `OFFER_SIGNER_CLIENT_AUTH=none` (or `serve --demo`): no credential is asked for.
    public var isOpen: Bool
    /// Clock skew allowed for `exp` and `nbf`.
    public var leeway: TimeInterval

    public init(
        apiKeys: BearerTokens = .none,
        jwtSecret: String? = nil,
        jwtKeysPath: String? = nil,
        issuer: String? = nil,
        audience: String? = nil,
        customerClaim: String = "sub",
        isOpen: Bool = false,
        leeway: TimeInterval = 60
    ) {
        self.apiKeys = apiKeys
        self.jwtSecret = jwtSecret
        self.jwtKeysPath = jwtKeysPath
        self.issuer = issuer
        self.audience = audience
        self.customerClaim = customerClaim
        self.isOpen = isOpen
        self.leeway = leeway
    }

    /// The open mode, for the demo and tests.
    public static let open = ClientAuthConfiguration(isOpen: true)

    /// Whether any credential is configured.
    public var hasCredentials: Bool { !apiKeys.isEmpty || jwtSecret != nil || jwtKeysPath != nil }
}

/// Checks client credentials: API keys by constant-time digest comparison, login JWTs with jwt-kit (HS256 with
/// the secret; ES256/RS256 with the configured public keys, reloaded with the signing keys).
public final class ClientAuthenticator: Sendable {
    /// The configuration.
    public let configuration: ClientAuthConfiguration
    private let secretKeys: JWTKeyCollection?
    private let publicKeys: Mutex<LoginPublicKeys?>

    /// Builds the authenticator, reading `OFFER_SIGNER_CLIENT_JWT_KEYS`.
    /// - Throws: ``ConfigurationError`` when the key file cannot be read or holds no usable key.
    public init(_ configuration: ClientAuthConfiguration) async throws(ConfigurationError) {
        self.configuration = configuration
        if let secret = configuration.jwtSecret {
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
            secretKeys = keys
        } else {
            secretKeys = nil
        }
        if let path = configuration.jwtKeysPath {
            publicKeys = Mutex(try await LoginPublicKeys.load(path))
        } else {
            publicKeys = Mutex(nil)
        }
    }

    /// Re-reads `OFFER_SIGNER_CLIENT_JWT_KEYS` (with the signing keys: SIGHUP, the admin reload); a bad file
    /// keeps the previous keys and throws.
    public func reloadPublicKeys() async throws(ConfigurationError) {
        guard let path = configuration.jwtKeysPath else { return }
        let keys = try await LoginPublicKeys.load(path)
        publicKeys.withLock { $0 = keys }
    }

    /// Who presents `authorization` (the `Authorization` header).
    /// - Throws: ``OfferServiceError`` `unauthorized` for a missing, unknown, malformed, expired or
    ///   not-yet-valid credential.
    public func authenticate(authorization: String?) async throws(OfferServiceError) -> ClientIdentity {
        if let identity = immediateIdentity(authorization: authorization) { return identity }
        guard let authorization, let token = Self.bearerToken(authorization) else {
            throw OfferServiceError(
                .unauthorized,
                "Send a client credential: Authorization: Bearer <an API key of \(variable: .apiKeys), or the signed-in customer's login JWT>."
            )
        }
        if configuration.isOpen { return .open }
        guard token.split(separator: ".", omittingEmptySubsequences: false).count == 3 else {
            throw OfferServiceError(.unauthorized, "The bearer token is neither an API key of this service nor a JWT.")
        }
        return .customer(try await verifyJWT(token))
    }

    /// The identity that needs no suspension to establish — the open mode without a credential, a known API key,
    /// any bearer token in the open mode — or `nil` (a login JWT to verify, or a failure that
    /// ``authenticate(authorization:)`` reports). What the event-loop signing path accepts.
    public func immediateIdentity(authorization: String?) -> ClientIdentity? {
        guard let authorization else { return configuration.isOpen ? .open : nil }
        guard let token = Self.bearerToken(authorization) else { return nil }
        if let name = configuration.apiKeys.admin(presenting: token) { return .apiKey(name: name) }
        return configuration.isOpen ? .open : nil
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme in any case, the token trimmed of
    /// white space), or `nil` when the header is longer than 8 KiB characters or not a bearer credential.
    static func bearerToken(_ authorization: String) -> String? {
        var header = authorization
        // ASCII (every real header): a character is a byte, and the only ASCII white space of `.whitespaces` is
        // space and tab; read over the string's memory. `nil`: not ASCII.
        let ascii: String?? = header.withUTF8 { bytes in
            for byte in bytes where byte >= 0x80 { return nil }
            let scheme: StaticString = "bearer "
            guard bytes.count <= 8 * 1024, bytes.count >= scheme.utf8CodeUnitCount else { return .some(nil) }
            for offset in 0..<scheme.utf8CodeUnitCount {
                let byte = bytes[offset]
                let expected = scheme.utf8Start[offset]
                // A letter in either case.
                guard expected == UInt8(ascii: " ") ? byte == expected : byte | 0x20 == expected else { return .some(nil) }
            }
            let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var start = scheme.utf8CodeUnitCount
            var end = bytes.count
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            return .some(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
        }
        if let ascii { return ascii }
        // Not plain ASCII (rare): Unicode-aware, character by character.
        guard authorization.count <= 8 * 1024, authorization.lowercased().hasPrefix("bearer ") else { return nil }
        return authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
    }

    /// The customer a login JWT names, after its header, claim types, signature, `exp`, `nbf`, `iss` and `aud` are
    /// checked.
    private func verifyJWT(_ token: String) async throws(OfferServiceError) -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard let headerData = Data(base64URLEncoded: parts[0]) else {
            throw OfferServiceError(.unauthorized, "The login token's header is not base64url JSON.")
        }
        let header = try LoginHeader(headerData)
        guard let payloadData = Data(base64URLEncoded: parts[1]) else {
            throw OfferServiceError(.unauthorized, "The login token's claims are not base64url JSON.")
        }
        let claims = try LoginClaims(payloadData, customerClaim: configuration.customerClaim)
        let keys: JWTKeyCollection?
        switch header.alg {
        case "HS256": keys = secretKeys
        case "ES256", "RS256":
            let loaded = publicKeys.withLock { $0 }
            try loaded?.requireKey(alg: header.alg, kid: header.kid)
            keys = loaded?.collection
        default: keys = nil
        }
        guard let keys else {
            throw OfferServiceError(
                .unauthorized,
                """
                The login token's algorithm (\(header.alg.prefix(10))) is not accepted here; this service takes HS256 with \
                \(variable: .clientJwtSecret), ES256 or RS256 with \(variable: .clientJwtKeys).
                """
            )
        }
        do {
            _ = try await keys.verify(token, as: SignatureOnly.self)
        } catch {
            throw OfferServiceError(.unauthorized, "The login token's signature does not verify with the configured keys.")
        }
        let now = Date().timeIntervalSince1970
        guard let exp = claims.exp else {
            throw OfferServiceError(.unauthorized, "The login token has no exp; issue tokens that expire.")
        }
        guard exp + configuration.leeway > now else {
            throw OfferServiceError(.unauthorized, "The login token has expired; sign the customer in again.")
        }
        if let nbf = claims.nbf, nbf - configuration.leeway > now {
            throw OfferServiceError(.unauthorized, "The login token is not valid yet (nbf).")
        }
        if let issuer = configuration.issuer, claims.iss != issuer {
            throw OfferServiceError(.unauthorized, "The login token's issuer is not the one this service accepts.")
        }
        if let audience = configuration.audience, !claims.aud.contains(audience) {
            throw OfferServiceError(.unauthorized, "The login token is not for this audience.")
        }
        guard let customer = claims.customer, !customer.isEmpty else {
            throw OfferServiceError(.unauthorized, "The login token has no \(configuration.customerClaim) claim naming the customer.")
        }
        do {
            try CustomerIdentifier.validate(customer, named: configuration.customerClaim)
        } catch {
            throw OfferServiceError(
                .unauthorized,
                "The login token's \(configuration.customerClaim) claim cannot be an applicationUsername: \(error.message)"
            )
        }
        return customer.lowercased()
    }
}

/// Authenticates every request of the group it guards (`/v1/offers/*`) and applies the per-credential rate
/// limit; puts the ``ClientIdentity`` in the context. 401 `unauthorized` with `WWW-Authenticate`; 429
/// `rate_limited` with `Retry-After`.
struct ClientAuthenticationMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext
    let authenticator: ClientAuthenticator
    let limits: RateLimits

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let identity: ClientIdentity
        do {
            identity = try await authenticator.authenticate(authorization: request.headers[.authorization])
        } catch {
            var failure = APIError(error)
            failure.headers[.wwwAuthenticate] = "Bearer realm=\"offer-signer\""
            throw failure
        }
        try await limits.admit(credential: identity.rateLimitCredential(remoteAddress: context.remoteAddress), identity: identity)
        var context = context
        context.identity = identity
        return try await next(request, context)
    }
}
