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

@Suite struct SignRouteTests {
    static let validBody = #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"User-0001"}"#

    @Test("a sign request returns a bundle that verifies with the key it names", arguments: FrontEnd.allCases)
    func signReturnsVerifiableBundle(_ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.post("/v1/offers/sign", json: Self.validBody)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
            let bundle = try response.decode(SignedLegacyOffer.self)
            #expect(bundle.format == "legacy")
            #expect(bundle.bundleIdentifier == "com.example.app")
            #expect(bundle.applicationUsername == "user-0001")
            #expect(bundle.keyIdentifier == "TESTKEY001")
            #expect(!response.text.contains(#"\/"#))
            let signature = try P256.Signing.ECDSASignature(derRepresentation: try #require(Data(base64Encoded: bundle.signature)))
            #expect(test.key.publicKey.isValidSignature(signature, for: bundle.payload.bytes))
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func namingTheConfiguredAppWorksAndAnotherIs404(_ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            let named = try await client.post(
                "/v1/offers/sign",
                json: #"{"bundleIdentifier":"com.example.app","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u"}"#
            )
            #expect(named.status == .ok)
            let other = try await client.post(
                "/v1/offers/sign",
                json: #"{"bundleIdentifier":"com.example.other","productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u"}"#
            )
            #expect(other.status == .notFound)
            #expect(try other.decode(ErrorBody.self).error.code == "unknown_app")
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func withSeveralAppsTheBundleIdentifierIsRequired(_ frontEnd: FrontEnd) async throws {
        let test = try TestService(apps: ["com.example.a", "com.example.b"])
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.post("/v1/offers/sign", json: Self.validBody)
            #expect(response.status == .badRequest)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.code == "invalid_request")
            #expect(error.field == "bundleIdentifier")
        }
    }

    struct BadRequest: Sendable, CustomTestStringConvertible {
        let name: String
        let body: String
        let status: HTTPResponse.Status
        let code: String
        let field: String?
        var testDescription: String { name }
    }

    static let badRequests: [BadRequest] = [
        BadRequest(name: "not JSON", body: "{not json", status: .badRequest, code: "malformed_json", field: nil),
        BadRequest(name: "empty body", body: "", status: .badRequest, code: "malformed_json", field: nil),
        BadRequest(name: "JSON array", body: "[1,2]", status: .badRequest, code: "invalid_request", field: nil),
        BadRequest(
            name: "duplicate key",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","offerIdentifier":"other"}"#,
            status: .badRequest,
            code: "duplicate_key",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "duplicate key spelled with an escape",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","offer\u0049dentifier":"other"}"#,
            status: .badRequest,
            code: "duplicate_key",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "U+202E in offer",
            body: #"{"productIdentifier":"p","offerIdentifier":"a\u202Eb","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "U+200D in product",
            body: #"{"productIdentifier":"p\u200D","offerIdentifier":"o","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "productIdentifier"
        ),
        BadRequest(
            name: "U+FEFF in username",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"\uFEFFu"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "U+2028 in username",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"a\u2028b"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "U+2062 in offer",
            body: #"{"productIdentifier":"p","offerIdentifier":"a\u2062b","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "U+2064 in offer",
            body: #"{"productIdentifier":"p","offerIdentifier":"a\u2064b","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "254 × İ grows past 255 when lower-cased",
            body: "{\"productIdentifier\":\"p\",\"offerIdentifier\":\"o\",\"applicationUsername\":\"\(String(repeating: "\u{0130}", count: 254))\"}",
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "Greek capital sigma",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"ΟΔΥΣΣΕΥΣ"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "missing productIdentifier",
            body: #"{"offerIdentifier":"o","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "productIdentifier"
        ),
        BadRequest(
            name: "missing applicationUsername",
            body: #"{"productIdentifier":"p","offerIdentifier":"o"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "number for a string",
            body: #"{"productIdentifier":42,"offerIdentifier":"o","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "productIdentifier"
        ),
        BadRequest(
            name: "null offer",
            body: #"{"productIdentifier":"p","offerIdentifier":null,"applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "unknown format",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"xml"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "format"
        ),
        BadRequest(
            name: "U+2063 in offer",
            body: #"{"productIdentifier":"p","offerIdentifier":"a\u2063b","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "U+2063 in username",
            body: "{\"productIdentifier\":\"p\",\"offerIdentifier\":\"o\",\"applicationUsername\":\"a\u{2063}b\"}",
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "empty product",
            body: #"{"productIdentifier":"","offerIdentifier":"o","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "productIdentifier"
        ),
        BadRequest(
            name: "empty username",
            body: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":""}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "applicationUsername"
        ),
        BadRequest(
            name: "over-long product",
            body: "{\"productIdentifier\":\"\(String(repeating: "p", count: 256))\",\"offerIdentifier\":\"o\",\"applicationUsername\":\"u\"}",
            status: .badRequest,
            code: "invalid_request",
            field: "productIdentifier"
        ),
        BadRequest(
            name: "over-long bundle",
            body:
                """
                {\"bundleIdentifier\":\"\(String(repeating: "b", count: 156))\",\"productIdentifier\":\"p\",\
                \"offerIdentifier\":\"o\",\"applicationUsername\":\"u\"}
                """,
            status: .notFound,
            code: "unknown_app",
            field: nil
        ),
        BadRequest(
            name: "control character",
            body: #"{"productIdentifier":"p","offerIdentifier":"o\n","applicationUsername":"u"}"#,
            status: .badRequest,
            code: "invalid_request",
            field: "offerIdentifier"
        ),
        BadRequest(
            name: "oversized body",
            body: "{\"productIdentifier\":\"\(String(repeating: "x", count: 70_000))\"}",
            status: .contentTooLarge,
            code: "payload_too_large",
            field: nil
        ),
    ]

    @Test("bad requests get the error shape with the right status, code and field", arguments: badRequests, FrontEnd.allCases)
    func badRequestsAreRefused(_ bad: BadRequest, _ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.post("/v1/offers/sign", json: bad.body)
            #expect(response.status == bad.status)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.code == bad.code)
            #expect(error.field == bad.field)
            #expect(!error.message.isEmpty)
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func anOversizedBodyOverALiveConnectionIs413(_ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(.live) { client in
            let response = try await client.post("/v1/offers/sign", json: "{\"productIdentifier\":\"\(String(repeating: "x", count: 200_000))\"}")
            #expect(response.status == .contentTooLarge)
            #expect(try response.decode(ErrorBody.self).error.code == "payload_too_large")
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func severalKeysWithoutAnActiveOneIs503NoSigningKey(_ frontEnd: FrontEnd) async throws {
        let keys = [try SigningKey.generate(keyIdentifier: "KEYA"), try SigningKey.generate(keyIdentifier: "KEYB")]
        try await TestService(keys: keys).application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.post("/v1/offers/sign", json: Self.validBody)
            #expect(response.status == .serviceUnavailable)
            #expect(try response.decode(ErrorBody.self).error.code == "no_signing_key")
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .serviceUnavailable)
        }
    }

    @Test func unknownRouteUsesTheErrorShape() async throws {
        try await TestService().application.test(.router) { client in
            let response = try await client.execute(uri: "/v1/nothing", method: .get)
            #expect(response.status == .notFound)
            #expect(try response.decode(ErrorBody.self).error.code == "not_found")
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func errorResponsesNeverContainKeyMaterial(_ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            for body in Self.badRequests.map(\.body) + [Self.validBody] {
                let response = try await client.post("/v1/offers/sign", json: body)
                #expect(!response.text.contains("PRIVATE KEY"))
                #expect(!response.text.contains(test.key.privateKey.rawRepresentation.base64EncodedString()))
            }
        }
    }
}
