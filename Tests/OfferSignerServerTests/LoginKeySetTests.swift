import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
import OfferSignerServer
import Testing

/// `OFFER_SIGNER_CLIENT_JWT_KEYS` as a JWK Set: only ES256 and RS256 keys, each named by its kid when there are
/// several; a token must name a key of the set and that key's algorithm.
@Suite struct LoginKeySetTests {
    static func jwk(_ key: P256.Signing.PublicKey, kid: String?, alg: String? = nil) -> String {
        let raw = key.rawRepresentation
        func b64(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
                of: "=",
                with: ""
            )
        }
        var fields = [#""kty":"EC""#, #""crv":"P-256""#, #""x":"\#(b64(raw.prefix(32)))""#, #""y":"\#(b64(raw.suffix(32)))""#]
        if let kid { fields.append(#""kid":"\#(kid)""#) }
        if let alg { fields.append(#""alg":"\#(alg)""#) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static func file(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("login-keys-\(UUID().uuidString).json")
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static func token(_ key: P256.Signing.PrivateKey, kid: String?, header alg: String? = nil) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: key.pemRepresentation), kid: kid.map { JWKIdentifier(string: $0) })
        let token = try await keys.sign(
            ClientAuthenticationTests.Login(sub: "user-7", exp: Int(Date().timeIntervalSince1970 + 600), iss: nil, aud: nil),
            kid: kid.map { JWKIdentifier(string: $0) }
        )
        guard let alg else { return token }
        // The same token under another header: what the header says must be the key's algorithm.
        let header = Data(#"{"alg":"\#(alg)","kid":"\#(kid ?? "")","typ":"JWT"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return ([header] + token.split(separator: ".").dropFirst().map(String.init)).joined(separator: ".")
    }

    @Test("a token names a key of the set and its algorithm: another kid, no kid, or another algorithm is 401")
    func tokensNameTheirKey() async throws {
        let (a, b) = (P256.Signing.PrivateKey(), P256.Signing.PrivateKey())
        // With what an identity provider's set also holds: an encryption key and a key of another kind, left out.
        let others =
            #"""
            {"kty":"RSA","use":"enc","alg":"RSA-OAEP","kid":"enc","n":"AQAB","e":"AQAB"},{"kty":"OKP","crv":"Ed25519",\#
            "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"ed"}
            """#
        let path = try Self.file(#"{"keys":[\#(Self.jwk(a.publicKey, kid: "a", alg: "ES256")),\#(others),\#(Self.jwk(b.publicKey, kid: "b"))]}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await ClientAuthenticationTests.application(ClientAuthConfiguration(jwtKeysPath: path)).test(.router) { client async throws in
            func sign(_ token: String) async throws -> HTTPResponse.Status {
                try await client.execute(
                    uri: "/v1/offers/sign",
                    method: .post,
                    headers: [.contentType: "application/json", .authorization: "Bearer \(token)"],
                    body: ByteBuffer(string: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50"}"#)
                ).status
            }
            #expect(try await sign(try await Self.token(a, kid: "a")) == .ok)
            #expect(try await sign(try await Self.token(b, kid: "b")) == .ok)
            #expect(try await sign(try await Self.token(a, kid: "b")) == .unauthorized)
            #expect(try await sign(try await Self.token(a, kid: "nobody")) == .unauthorized)
            #expect(try await sign(try await Self.token(a, kid: nil)) == .unauthorized)
            #expect(try await sign(try await Self.token(a, kid: "a", header: "RS256")) == .unauthorized)
            #expect(try await sign(try await Self.token(a, kid: "ed", header: "EdDSA")) == .unauthorized)
        }
    }

    @Test(
        "a set without an ES256 or RS256 signing key, or with a signing key without its own kid, is refused at start-up and on reload",
        arguments: [
            #"{"keys":[]}"#,
            #"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"e"}]}"#,
            #"{"keys":[{"kty":"EC","crv":"P-384","x":"AA","y":"AA","kid":"p384"}]}"#,
            "MISSTATED", "TWO-WITHOUT-KID", "ONE-WITHOUT-KID", #"{"no":"keys"}"#,
        ]
    )
    func unusableSetsAreRefused(_ text: String) async throws {
        let key = P256.Signing.PrivateKey()
        let set =
            switch text {
            case "MISSTATED": #"{"keys":[\#(Self.jwk(key.publicKey, kid: "a", alg: "ES384"))]}"#
            case "ONE-WITHOUT-KID": #"{"keys":[\#(Self.jwk(key.publicKey, kid: nil))]}"#
            case "TWO-WITHOUT-KID": #"{"keys":[\#(Self.jwk(key.publicKey, kid: nil)),\#(Self.jwk(P256.Signing.PrivateKey().publicKey, kid: nil))]}"#
            default: text
            }
        let path = try Self.file(set)
        defer { try? FileManager.default.removeItem(atPath: path) }
        await #expect(throws: ConfigurationError.self) { _ = try await ClientAuthenticator(ClientAuthConfiguration(jwtKeysPath: path)) }

        // On reload: refused, and the keys in force keep serving.
        let good = try Self.file(#"{"keys":[\#(Self.jwk(key.publicKey, kid: "a"))]}"#)
        defer { try? FileManager.default.removeItem(atPath: good) }
        let authenticator = try await ClientAuthenticator(ClientAuthConfiguration(jwtKeysPath: good))
        try set.write(toFile: good, atomically: true, encoding: .utf8)
        await #expect(throws: ConfigurationError.self) { try await authenticator.reloadPublicKeys() }
        let identity = try await authenticator.authenticate(authorization: "Bearer \(try await Self.token(key, kid: "a"))")
        #expect(identity.credentialName == "jwt")
    }
}
