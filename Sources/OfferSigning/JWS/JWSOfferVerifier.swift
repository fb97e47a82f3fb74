import Crypto
import Foundation
import JWTKit

/// The header and claims of an offer JWS as decoded, whatever they hold: what `verify` reports back.
public struct OfferJWSContents: Sendable, Hashable, Codable {
    /// Header fields.
    public struct Header: Sendable, Hashable, Codable {
        public var alg: String?
        public var kid: String?
        public var typ: String?
        public var x5c: [String]?
    }

    /// Claims of either offer audience; absent ones are `nil`.
    public struct Claims: Sendable, Hashable, Codable {
        public var iss: String?
        public var bid: String?
        public var aud: String?
        public var iat: Double?
        public var nonce: String?
        public var productIdentifier: String?
        public var offerIdentifier: String?
        public var transactionId: String?
        public var allowIntroductoryOffer: Bool?
        /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
        enum CodingKeys: String, CodingKey {
            case iss
            case bid
            case aud
            case iat
            case nonce
            case productIdentifier = "productId"
            case offerIdentifier
            case transactionId
            case allowIntroductoryOffer
        }
    }

    /// The decoded header.
    public var header: Header
    /// The decoded claims.
    public var claims: Claims
}

/// The outcome of verifying an offer JWS, with what was checked.
public struct JWSOfferVerification: Sendable, Hashable, Codable {
    /// Whether signature, key state, audience and claims are all good.
    public var valid: Bool
    /// Why not: `malformed_jws`, `unsupported_algorithm`, `unknown_key`, `key_revoked`, `signature_mismatch`,
    /// `wrong_audience`, `invalid_claims`. `nil` when valid.
    public var reason: String?
    /// A sentence for humans about `reason`.
    public var message: String?
    /// The `kid` of the header.
    public var keyIdentifier: String?
    /// That key's state, if the service knows it.
    public var keyState: KeyState?
    /// The decoded header and claims (when the token could be decoded).
    public var header: OfferJWSContents.Header?
    /// The decoded claims.
    public var claims: OfferJWSContents.Claims?
    /// `current`, `expired` (more than 24 hours after `iat`) or `future`. Reported, never fatal.
    public var validityWindow: String?
    /// Notes that do not make the token invalid.
    public var warnings: [String]
}

/// Verifies promotional offer V2 and introductory-offer eligibility JWS with the keys of a ``KeyRing``.
public enum JWSOfferVerifier {
    /// Verifies `token`: ES256, a known and not revoked `kid`, the signature (jwt-kit), an offer audience and
    /// the claims that audience requires.
    public static func verify(_ token: String, keyRing: KeyRing, now: Date = Date()) async -> JWSOfferVerification {
        var result = JWSOfferVerification(valid: false, warnings: [])
        func fail(_ reason: String, _ message: String) -> JWSOfferVerification {
            result.reason = reason
            result.message = message
            return result
        }
        guard let contents = decode(token) else {
            return fail(
                "malformed_jws",
                "signature is not a compact JWS (three base64url parts: header, claims, signature, with JSON header and claims)."
            )
        }
        result.header = contents.header
        result.claims = contents.claims
        result.keyIdentifier = contents.header.kid
        if let iat = contents.claims.iat, let milliseconds = OfferTimestamp.milliseconds(fromSeconds: iat) {
            result.validityWindow = OfferTimestamp.window(of: milliseconds, now: now)
        }
        guard contents.header.alg == "ES256" else {
            return fail("unsupported_algorithm", "alg is \(contents.header.alg ?? "missing"); offer signatures are ES256.")
        }
        if let keyIdentifier = contents.header.kid, keyRing.state(of: keyIdentifier) == .revoked {
            result.keyState = .revoked
            return fail("key_revoked", "Key \(keyIdentifier) is revoked: its signatures are no longer valid.")
        }
        guard let keyIdentifier = contents.header.kid, let key = keyRing.verificationKey(for: keyIdentifier) else {
            return fail("unknown_key", "No key \(contents.header.kid ?? "(no kid in the header)") is known to this service.")
        }
        result.keyState = keyRing.state(of: keyIdentifier)
        do {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: try ES256PublicKey(backing: key.publicKey), kid: JWKIdentifier(string: keyIdentifier))
            _ = try await keys.verify(token, as: LenientClaims.self)
        } catch {
            return fail("signature_mismatch", "The signature does not match this header and these claims under key \(keyIdentifier).")
        }
        if contents.header.typ != "JWT" { result.warnings.append("typ is \(contents.header.typ ?? "missing"), expected JWT.") }
        if contents.header.x5c != nil { result.warnings.append("The header carries x5c; offer signatures have none.") }
        let claims = contents.claims
        let audience = claims.aud
        guard audience == PromotionalOfferV2Claims.audience || audience == IntroductoryOfferEligibilityClaims.audience else {
            return fail("wrong_audience", "aud is \(audience ?? "missing"); expected promotional-offer or introductory-offer-eligibility.")
        }
        var missing: [String] = []
        if claims.iss?.isEmpty ?? true { missing.append("iss") }
        if claims.bid?.isEmpty ?? true { missing.append("bid") }
        if claims.productIdentifier?.isEmpty ?? true { missing.append("productId") }
        if audience == PromotionalOfferV2Claims.audience {
            if claims.offerIdentifier?.isEmpty ?? true { missing.append("offerIdentifier") }
        } else {
            if claims.allowIntroductoryOffer == nil { missing.append("allowIntroductoryOffer") }
            if claims.transactionId?.isEmpty ?? true { missing.append("transactionId") }
        }
        if !missing.isEmpty {
            return fail("invalid_claims", "Missing claims for \(audience ?? ""): \(missing.joined(separator: ", ")).")
        }
        guard let iat = claims.iat, OfferTimestamp.milliseconds(fromSeconds: iat) != nil else {
            return fail("invalid_claims", "iat must be a whole number of seconds since 1970, at most 253402300799 (year 9999).")
        }
        guard let nonce = claims.nonce, UUID(uuidString: nonce) != nil, nonce == nonce.lowercased() else {
            return fail("invalid_claims", "nonce must be a lower-case UUID.")
        }
        result.valid = true
        return result
    }

    /// Decodes header and claims without checking anything.
    public static func decode(_ token: String) -> OfferJWSContents? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[2].isEmpty,
            let headerData = Data(base64URLEncoded: parts[0]), let claimsData = Data(base64URLEncoded: parts[1]),
            let header = try? JSONDecoder().decode(OfferJWSContents.Header.self, from: headerData),
            let claims = try? JSONDecoder().decode(OfferJWSContents.Claims.self, from: claimsData)
        else { return nil }
        return OfferJWSContents(header: header, claims: claims)
    }

    /// Accepts any JSON object, so that jwt-kit checks only the signature; the claims are judged above.
    struct LenientClaims: JWTPayload {
        init(from decoder: any Decoder) throws {}
        func encode(to encoder: any Encoder) throws {}
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

extension Data {
    /// Decodes base64url without padding (RFC 7515 §2); the inverse of ``base64URLEncodedString()``.
    public init?(base64URLEncoded text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
