import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import Logging
import NIOCore
import OfferApplication
import OfferSignerServer
import OfferSigning
import Testing

/// The public edge (issue 13): a stranger is refused, a backend with a key is served for anyone, an app with a
/// login JWT for its own customer only, a flood is throttled while other customers are served.
@Suite struct ClientAuthenticationTests {
    static let apiKey = "backend-key-0123456789abcdef"
    static let secret = "login-secret-0123456789abcdef-0123456789"

    struct Login: JWTPayload {
        var sub: String
        var exp: Int
        var iss: String?
        var aud: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func hs256(
        customer: String,
        expiresIn: TimeInterval = 600,
        issuer: String? = "https://login.example.com",
        audience: String? = "offer-signer"
    ) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(Login(sub: customer, exp: Int(Date().timeIntervalSince1970 + expiresIn), iss: issuer, aud: audience))
    }

    static func application(
        _ configuration: ClientAuthConfiguration,
        limits: RateLimitConfiguration = RateLimitConfiguration(),
        frontEnd: FrontEnd = .router
    ) async throws -> some ApplicationProtocol {
        let test = try TestService()
        let authenticator = try await ClientAuthenticator(configuration)
        let rateLimits = RateLimits(limits)
        return frontEnd.application(
            router: buildRouter(
                useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil),
                authenticator: authenticator,
                rateLimits: rateLimits
            ),
            service: test.service,
            authenticator: authenticator,
            limits: rateLimits
        )
    }

    static let both = ClientAuthConfiguration(
        apiKeys: try! BearerTokens(parsing: "backend:\(apiKey)", variable: "OFFER_SIGNER_API_KEYS", requireNames: true),
        jwtSecret: secret,
        issuer: "https://login.example.com",
        audience: "offer-signer"
    )

    private func sign(_ client: some TestClientProtocol, authorization: String?, customer: String?) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let authorization { headers[.authorization] = authorization }
        let named = customer.map { #","applicationUsername":"\#($0)""# } ?? ""
        return try await client.execute(
            uri: "/v1/offers/sign",
            method: .post,
            headers: headers,
            body: ByteBuffer(string: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50"\#(named)}"#)
        )
    }

    /// HTTP types join a repeated field's values ("Bearer k, Bearer k": no credential); the event-loop path, which
    /// reads NIOHTTP1's headers, hands such a request to the router instead of reading the first.
    @Test(arguments: FrontEnd.allCases)
    func anAuthorizationHeaderSentTwiceIsNoCredential(_ frontEnd: FrontEnd) async throws {
        try await Self.application(Self.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            var headers: HTTPFields = [.contentType: "application/json"]
            headers.append(HTTPField(name: .authorization, value: "Bearer \(Self.apiKey)"))
            headers.append(HTTPField(name: .authorization, value: "Bearer \(Self.apiKey)"))
            let response = try await client.execute(
                uri: "/v1/offers/sign",
                method: .post,
                headers: headers,
                body: ByteBuffer(
                    string: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#
                )
            )
            #expect(response.status == .unauthorized)
            let once = try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "user-1")
            #expect(once.status == .ok)
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func aStrangerIsRefusedWith401AndWWWAuthenticate(_ frontEnd: FrontEnd) async throws {
        try await Self.application(Self.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            for authorization in [nil, "Bearer not-a-key-0123456789", "Basic dXNlcjpwYXNz", "Bearer a.b.c"] {
                let response = try await sign(client, authorization: authorization, customer: "user-1")
                #expect(response.status == .unauthorized, "\(authorization ?? "none")")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                #expect(try response.decode(ErrorBody.self).error.code == "unauthorized")
            }
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func aBackendWithAnAPIKeyIsServedForAnyCustomer(_ frontEnd: FrontEnd) async throws {
        try await Self.application(Self.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            for customer in ["user-1", "user-2"] {
                let response = try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: customer)
                #expect(response.status == .ok)
                #expect(response.text.contains(#""applicationUsername":"\#(customer)""#))
            }
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func anAppWithALoginJWTIsServedForItsOwnCustomerOnly(_ frontEnd: FrontEnd) async throws {
        let token = try await Self.hs256(customer: "User-1")
        try await Self.application(Self.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            let own = try await sign(client, authorization: "Bearer \(token)", customer: "user-1")
            #expect(own.status == .ok)
            let unnamed = try await sign(client, authorization: "Bearer \(token)", customer: nil)
            #expect(unnamed.status == .ok)
            #expect(unnamed.text.contains(#""applicationUsername":"user-1""#))
            let other = try await sign(client, authorization: "Bearer \(token)", customer: "user-2")
            #expect(other.status == .forbidden)
            #expect(try other.decode(ErrorBody.self).error.code == "customer_mismatch")
            let eligibility = try await client.execute(
                uri: "/v1/offers/eligibility",
                method: .post,
                headers: [.contentType: "application/json", .authorization: "Bearer \(token)"],
                body: ByteBuffer(string: #"{"applicationUsername":"user-2"}"#)
            )
            #expect(eligibility.status == .forbidden)
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func expiredForgedOrMisdirectedLoginTokensAre401(_ frontEnd: FrontEnd) async throws {
        let expired = try await Self.hs256(customer: "user-1", expiresIn: -3_600)
        let otherIssuer = try await Self.hs256(customer: "user-1", issuer: "https://evil.example.com")
        let otherAudience = try await Self.hs256(customer: "user-1", audience: "someone-else")
        let good = try await Self.hs256(customer: "user-1")
        let parts = good.split(separator: ".")
        let unsigned = "\(parts[0]).\(parts[1])."
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.\(parts[1])."
        try await Self.application(Self.both, frontEnd: frontEnd).test(frontEnd.setup) { client in
            for token in [expired, otherIssuer, otherAudience, unsigned, none, "\(parts[0]).\(parts[1]).AAAA"] {
                let response = try await sign(client, authorization: "Bearer \(token)", customer: nil)
                #expect(response.status == .unauthorized)
                #expect(!response.text.contains(token))
            }
        }
    }

    @Test func anES256LoginKeyFromAPEMFileIsAccepted() async throws {
        let key = P256.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("login-\(UUID().uuidString).pem")
        try key.publicKey.pemRepresentation.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(pem: key.pemRepresentation))
        let token = try await keys.sign(Login(sub: "user-9", exp: Int(Date().timeIntervalSince1970 + 600), iss: nil, aud: nil))
        try await Self.application(ClientAuthConfiguration(jwtKeysPath: file.path)).test(.router) { client in
            let response = try await sign(client, authorization: "Bearer \(token)", customer: nil)
            #expect(response.status == .ok)
            #expect(response.text.contains("user-9"))
        }
    }

    @Test(arguments: FrontEnd.allCases)
    func aFloodForOneCustomerIsThrottledWhileAnotherIsServed(_ frontEnd: FrontEnd) async throws {
        let flooder = try await Self.hs256(customer: "flooder")
        let calm = try await Self.hs256(customer: "calm")
        try await Self.application(Self.both, limits: RateLimitConfiguration(customer: Rate(count: 5, seconds: 60)), frontEnd: frontEnd).test(
            frontEnd.setup
        ) { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<8 { statuses.append(try await sign(client, authorization: "Bearer \(flooder)", customer: nil).status) }
            #expect(statuses.prefix(5).allSatisfy { $0 == .ok })
            #expect(statuses.dropFirst(5).allSatisfy { $0 == .tooManyRequests })
            let limited = try await sign(client, authorization: "Bearer \(flooder)", customer: nil)
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(try limited.decode(ErrorBody.self).error.code == "rate_limited")
            #expect(try await sign(client, authorization: "Bearer \(calm)", customer: nil).status == .ok)
        }
    }

    @Test("an API key's customers are throttled by the configured limits, and so is the key", arguments: FrontEnd.allCases)
    func anAPIKeyIsThrottledPerCustomerAndPerKey(_ frontEnd: FrontEnd) async throws {
        let limits = RateLimitConfiguration(
            client: Rate(count: 8, seconds: 60),
            customer: Rate(count: 3, seconds: 60),
            clientExplicit: true,
            customerExplicit: true
        )
        try await Self.application(Self.both, limits: limits, frontEnd: frontEnd).test(frontEnd.setup) { client in
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<5 { statuses.append(try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "flooder").status) }
            #expect(statuses == [.ok, .ok, .ok, .tooManyRequests, .tooManyRequests])
            let limited = try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "Flooder")
            #expect(limited.status == .tooManyRequests)
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            #expect(limited.headers[HTTPField.Name("X-Request-Id")!] != nil)
            #expect(try limited.decode(ErrorBody.self).error.code == "rate_limited")
            // Six requests so far spent six of the key's eight; two more customers are served, then the key is throttled.
            #expect(try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "calm-1").status == .ok)
            #expect(try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "calm-2").status == .ok)
            #expect(try await sign(client, authorization: "Bearer \(Self.apiKey)", customer: "calm-3").status == .tooManyRequests)
        }
    }

    @Test func theAppStoreEndpointAndHealthStayOpen() async throws {
        try await Self.application(Self.both).test(.router) { client in
            let notification = try await client.post("/v1/notifications/appstore", json: #"{"signedPayload":"x.y.z"}"#)
            #expect(notification.status != .unauthorized)
            #expect(try await client.execute(uri: "/healthz", method: .get).status == .ok)
            #expect(try await client.execute(uri: "/.well-known/jwks.json", method: .get).status == .ok)
        }
    }

    @Test func theOperationsListenerAndThePublicPortSplitTheRoutes() async throws {
        let test = try TestService()
        func operations(_ part: RouterPart) -> Set<String> {
            Set(
                buildRouter(
                    useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil),
                    adminTokens: try! BearerTokens(parsing: "a:0123456789abcdef0"),
                    part: part
                ).routes.map {
                    "\($0.method.rawValue) \($0.path)"
                }
            )
        }
        let publicPort = operations(.publicOnly)
        let operationsPort = operations(.operationsOnly)
        #expect(publicPort.contains("POST /v1/offers/sign"))
        #expect(!publicPort.contains { $0.contains("/admin") || $0.contains("/metrics") })
        #expect(!operationsPort.contains { $0.contains("/v1/") })
        #expect(operationsPort.contains("GET /healthz"))
    }
}
