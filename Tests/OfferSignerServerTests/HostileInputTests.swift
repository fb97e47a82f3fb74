import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferApplication
import OfferSignerServer
import OfferSigning
import Testing

/// Regression tests for requests that once killed the process (issue 11): every one must get an answer.
@Suite struct HostileInputTests {
    private static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64URLEncodedString()
    }

    /// A compact JWS with the given claims under an ES256 header and a junk signature part.
    private static func jws(claims: String, header: String = #"{"alg":"ES256"}"#) -> String {
        "\(base64URL(header)).\(base64URL(claims)).c2ln"
    }

    static let hostileIssuedAt = ["1e300", "-1e300", "9.3e18", "-9.3e18", "9223372036854775807", "1.5", "-1", "253402300800"]

    @Test(arguments: hostileIssuedAt)
    func aJWSWithAnOutOfRangeIssuedAtIsAnsweredNotTrapped(iat: String) async throws {
        let token = Self.jws(claims: #"{"iat":\#(iat)}"#)
        try await TestService().application.test(.router) { client in
            let response = try await client.post("/v1/offers/verify", json: #"{"signature":"\#(token)"}"#)
            #expect(response.status == .ok)
            #expect(response.text.contains(#""valid":false"#))
        }
    }

    @Test(arguments: hostileIssuedAt)
    func theJWSVerifierRefusesAnOutOfRangeIssuedAtEvenWithAGoodSignature(iat: String) async throws {
        let key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
        let ring = try KeyRing(keys: [.init(key: key, source: "test")])
        let header = Self.base64URL(#"{"alg":"ES256","kid":"TESTKEY001","typ":"JWT"}"#)
        let claims = Self.base64URL(
            #"""
            {"iss":"i","bid":"b","aud":"promotional-offer","iat":\#(iat),"nonce":"\#(UUID().uuidString.lowercased())","productId":"p",\#
            "offerIdentifier":"o"}
            """#
        )
        let signature = try key.privateKey.signature(for: Data("\(header).\(claims)".utf8)).rawRepresentation
        let token = "\(header).\(claims).\(signature.base64URLEncodedString())"
        let result = await JWSOfferVerifier.verify(token, keyRing: ring)
        #expect(!result.valid)
        #expect(result.reason == "invalid_claims", "\(result.message ?? "")")  // the signature is good: only the claims can fail
        #expect(result.validityWindow == nil)
    }

    static let hostileTimestamps: [Int64] = [.min, .min + 1, -1, 253_402_300_800_000, .max, .max - 1]

    @Test(arguments: hostileTimestamps)
    func aLegacyBundleWithAnOutOfRangeTimestampIsA400NamingIt(timestamp: Int64) async throws {
        let body = """
            {"bundleIdentifier":"com.example.app","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u",
             "keyIdentifier":"TESTKEY001","nonce":"\(UUID().uuidString.lowercased())","timestamp":\(timestamp),"signature":"MEUCIQ=="}
            """
        try await TestService().application.test(.router) { client in
            let response = try await client.post("/v1/offers/verify", json: body)
            #expect(response.status == .badRequest)
            let error = try response.decode(ErrorBody.self)
            #expect(error.error.field == "timestamp")
        }
    }

    @Test(arguments: hostileTimestamps)
    func theLegacyVerifierNeverTrapsOnATimestamp(timestamp: Int64) throws {
        let key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
        let ring = try KeyRing(keys: [.init(key: key, source: "test")])
        let bundle = SignedLegacyOffer(
            bundleIdentifier: "b",
            productIdentifier: "p",
            offerIdentifier: "o",
            applicationUsername: "u",
            keyIdentifier: "TESTKEY001",
            nonce: UUID().uuidString.lowercased(),
            timestamp: timestamp,
            signature: "MEUCIQ=="
        )
        let result = LegacyOfferVerifier.verify(bundle, keyRing: ring)
        #expect(!result.valid)
        #expect(result.reason == "invalid_field")
        #expect(["future", "expired"].contains(result.validityWindow))
    }

    @Test func theValidityWindowIsRightAtItsEdgesAndBeyondInt64() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let current = OfferSigner.currentTimestamp(now)
        #expect(OfferTimestamp.window(of: current, now: now) == "current")
        #expect(OfferTimestamp.window(of: current - LegacyOfferVerifier.validityMilliseconds, now: now) == "current")
        #expect(OfferTimestamp.window(of: current - LegacyOfferVerifier.validityMilliseconds - 1, now: now) == "expired")
        #expect(OfferTimestamp.window(of: current + 5 * 60 * 1000, now: now) == "current")
        #expect(OfferTimestamp.window(of: current + 5 * 60 * 1000 + 1, now: now) == "future")
        #expect(OfferTimestamp.window(of: .min, now: now) == "expired")
        #expect(OfferTimestamp.window(of: .max, now: now) == "future")
    }

    static let notJSON: [String?] = [nil, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonp"]

    @Test(arguments: notJSON, FrontEnd.allCases)
    func aBodyNotDeclaredAsJSONIsA415AndNothingIsSigned(contentType: String?, frontEnd: FrontEnd) async throws {
        let headers: HTTPFields = contentType.map { [.contentType: $0] } ?? [:]
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.execute(
                uri: "/v1/offers/sign",
                method: .post,
                headers: headers,
                body: ByteBuffer(string: SignRouteTests.validBody)
            )
            #expect(response.status == .unsupportedMediaType)
            #expect(try response.decode(ErrorBody.self).error.code == "unsupported_media_type")
        }
    }

    @Test(arguments: ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"], FrontEnd.allCases)
    func jsonWithParametersIsAccepted(contentType: String, frontEnd: FrontEnd) async throws {
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.execute(
                uri: "/v1/offers/sign",
                method: .post,
                headers: [.contentType: contentType],
                body: ByteBuffer(string: SignRouteTests.validBody)
            )
            #expect(response.status == .ok)
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func noErrorMessageNamesASwiftType(_ frontEnd: FrontEnd) async throws {
        let bodies = [
            #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"xml"}"#,
            #"{"productIdentifier":{"a":1},"offerIdentifier":"o","applicationUsername":"u"}"#,
            #"{"productIdentifier":[1],"offerIdentifier":"o","applicationUsername":"u"}"#,
            #"{"productIdentifier":1.5,"offerIdentifier":"o","applicationUsername":"u"}"#,
            "[1]",
        ]
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            for body in bodies {
                let response = try await client.post("/v1/offers/sign", json: body)
                #expect(response.status == .badRequest)
                let message = try response.decode(ErrorBody.self).error.message
                for word in ["Dictionary", "Array<", "String.Type", "OfferSignatureFormat", "Optional", "Swift.", "DecodingError"] {
                    #expect(!message.contains(word), "\(message)")
                }
            }
        }
    }

    @Test(arguments: ["1.5", "1e30", "-1e300", "9223372036854775808"])
    func aNonIntegerTimestampIsA400NamingTheField(timestamp: String) async throws {
        let body = """
            {"bundleIdentifier":"com.example.app","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u",
             "keyIdentifier":"TESTKEY001","nonce":"\(UUID().uuidString.lowercased())","timestamp":\(timestamp),"signature":"MEUCIQ=="}
            """
        try await TestService().application.test(.router) { client in
            let response = try await client.post("/v1/offers/verify", json: body)
            #expect(response.status == .badRequest)
            #expect(try response.decode(ErrorBody.self).error.field == "timestamp")
        }
    }
}
