import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferSignerServer
import Testing

/// Login JWTs whose claims have the wrong type, or whose header names critical extensions, are refused (issue 24):
/// a claim of another type is never read as absent.
@Suite struct LoginClaimTypeTests {
    /// An HS256 token over the exact header and claims text given (so types and duplicates can be wrong).
    static func token(header: String = #"{"alg":"HS256","typ":"JWT"}"#, claims: String) -> String {
        func segment(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let input = segment(header) + "." + segment(claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(ClientAuthenticationTests.secret.utf8)))
        return input + "."
            + Data(mac).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static var exp: Int { Int(Date().timeIntervalSince1970) + 600 }

    static func claims(_ extra: String, sub: String = #""user-1""#) -> String {
        #"{"sub":\#(sub),"exp":\#(exp),"iss":"https://login.example.com","aud":"offer-signer"\#(extra)}"#
    }

    static let refused: [(String, String)] = [
        ("nbf a string", token(claims: claims(#","nbf":"9999999999""#))),
        ("nbf an array", token(claims: claims(#","nbf":[9999999999]"#))),
        ("nbf an object", token(claims: claims(#","nbf":{}"#))),
        ("iat a string", token(claims: claims(#","iat":"now""#))),
        ("exp a string", token(claims: #"{"sub":"user-1","exp":"\#(exp)","iss":"https://login.example.com","aud":"offer-signer"}"#)),
        ("exp a boolean", token(claims: #"{"sub":"user-1","exp":true,"iss":"https://login.example.com","aud":"offer-signer"}"#)),
        ("sub a number", token(claims: claims("", sub: "12345"))),
        ("sub an array", token(claims: claims("", sub: #"["user-1"]"#))),
        ("iss a number", token(claims: #"{"sub":"user-1","exp":\#(exp),"iss":1,"aud":"offer-signer"}"#)),
        ("aud a number", token(claims: #"{"sub":"user-1","exp":\#(exp),"iss":"https://login.example.com","aud":7}"#)),
        ("aud an array with a number", token(claims: #"{"sub":"user-1","exp":\#(exp),"iss":"https://login.example.com","aud":["offer-signer",7]}"#)),
        ("a claim twice", token(claims: claims(#","sub":"user-2""#))),
        ("claims with a trailing comma", token(claims: claims(",", sub: #""user-1""#))),
        ("an unknown crit", token(header: #"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#, claims: claims(""))),
        ("an empty crit", token(header: #"{"alg":"HS256","crit":[]}"#, claims: claims(""))),
        ("alg twice", token(header: #"{"alg":"none","alg":"HS256"}"#, claims: claims(""))),
        ("alg a number", token(header: #"{"alg":256}"#, claims: claims(""))),
    ]

    @Test(arguments: FrontEnd.allCases)
    func wronglyTypedClaimsAndCritAre401(_ frontEnd: FrontEnd) async throws {
        let arrayAudience = Self.token(claims: #"{"sub":"user-1","exp":\#(Self.exp),"iss":"https://login.example.com","aud":["x","offer-signer"]}"#)
        try await ClientAuthenticationTests.application(ClientAuthenticationTests.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            let accepted = try await Self.sign(client, token: Self.token(claims: Self.claims(#","nbf":1,"iat":1.5"#)))
            #expect(accepted.status == .ok, "a well-typed token is served (the control)")
            #expect(try await Self.sign(client, token: arrayAudience).status == .ok, "aud as an array of strings")
            for (name, token) in Self.refused {
                let response = try await Self.sign(client, token: token)
                #expect(response.status == .unauthorized, "\(name)")
                let message = try response.decode(ErrorBody.self).error.message
                #expect(!message.contains(token) && !message.contains("user-1"), "\(name): \(message)")
            }
        }
    }

    static func sign(_ client: some TestClientProtocol, token: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/offers/sign",
            method: .post,
            headers: [.contentType: "application/json", .authorization: "Bearer \(token)"],
            body: ByteBuffer(string: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50"}"#)
        )
    }
}
