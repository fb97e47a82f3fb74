import AppStoreNotifications
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore

/// A request the fake received, after its token checked out.
public struct FakeRequest: Sendable {
    public enum Endpoint: String, Sendable { case statuses, history, notificationHistory }

    /// `production` or `sandbox` (the first path segment of the base URL).
    public let environment: String
    public let endpoint: Endpoint
    public let transactionId: String
    public let query: [String: String]
    /// The request's body (Get Notification History's span), empty for a `GET`.
    public var body: String = ""
}

/// What the fake answers.
public struct FakeResponse: Sendable {
    public var status: HTTPResponse.Status = .ok
    public var headers: [(String, String)] = []
    public var body: String = ""
    /// Hold the request until the test ends (or 10 s).
    public var hang = false
    /// Answer after this delay.
    public var delay: Duration = .zero

    /// An answer.
    public init(status: HTTPResponse.Status = .ok, headers: [(String, String)] = [], body: String = "", hang: Bool = false, delay: Duration = .zero) {
        self.status = status
        self.headers = headers
        self.body = body
        self.hang = hang
        self.delay = delay
    }

    /// A 200 with `value` as JSON.
    public static func json(_ value: some Encodable) -> FakeResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return FakeResponse(body: String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self))
    }

    /// An error answer as Apple shapes it.
    public static func error(_ status: HTTPResponse.Status, code: Int64, headers: [(String, String)] = []) -> FakeResponse {
        FakeResponse(
            status: status,
            headers: [("Content-Type", "application/json")] + headers,
            body: #"{"errorCode":\#(code),"errorMessage":"fake"}"#
        )
    }
}

/// What the fake saw.
public actor FakeLedger {
    public private(set) var calls: [String: Int] = [:]
    public private(set) var tokens: Set<String> = []
    public private(set) var rejectedTokens = 0
    public private(set) var released = false
    public private(set) var revisions: [String?] = []
    /// The `paginationToken` of each Get Notification History request, in order.
    public private(set) var paginationTokens: [String?] = []
    /// When each request was recorded (its token checked), in order.
    public private(set) var arrivals: [ContinuousClock.Instant] = []

    func record(_ request: FakeRequest, token: String) {
        arrivals.append(.now)
        calls["\(request.environment) \(request.endpoint.rawValue)", default: 0] += 1
        tokens.insert(token)
        if request.endpoint == .history { revisions.append(request.query["revision"]) }
        if request.endpoint == .notificationHistory { paginationTokens.append(request.query["paginationToken"]) }
    }

    public func rejected() { rejectedTokens += 1 }
    public func release() { released = true }

    public func count(_ environment: String, _ endpoint: FakeRequest.Endpoint) -> Int {
        calls["\(environment) \(endpoint.rawValue)", default: 0]
    }

    public var total: Int { calls.values.reduce(0, +) }
}

/// A local stand-in for Apple's App Store Server API on loopback: checks the bearer token as Apple documents it
/// (ES256 with the In-App Purchase key's public key, `kid`, `typ`, `iss`, `aud`, `bid`, `exp` at most an hour
/// after `iat`), counts calls, and answers what the test's `respond` says. Base URLs are
/// `http://localhost:<port>/production` and `…/sandbox`.
public struct FakeAppStore: Sendable {
    public static let keyIdentifier = "FAKEKEY123"
    public static let issuerId = "57246542-96fe-1a63-e053-0824d011072a"
    public static let appAppleId: Int64 = 1_234_567_890

    /// The In-App Purchase key the fake trusts.
    public let appKey: P256.Signing.PrivateKey
    /// The bundle ID tokens must carry (`bid`).
    public let bundleIdentifier: String
    public let ledger = FakeLedger()
    public let respond: @Sendable (FakeRequest) async throws -> FakeResponse

    /// A fake that trusts `appKey` for the app `bundleIdentifier` and answers what `respond` says.
    public init(
        appKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(),
        bundleIdentifier: String = TestPayloads.bundleIdentifier,
        respond: @escaping @Sendable (FakeRequest) async throws -> FakeResponse
    ) {
        self.appKey = appKey
        self.bundleIdentifier = bundleIdentifier
        self.respond = respond
    }

    /// Runs the fake for the duration of `body`, which gets the port.
    public func run<T: Sendable>(_ body: @escaping @Sendable (Int) async throws -> T) async throws -> T {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(backing: appKey.publicKey), kid: JWKIdentifier(string: Self.keyIdentifier))
        let router = Router()
        let ledger = self.ledger
        let bundleIdentifier = self.bundleIdentifier
        let respond = self.respond
        let handle: @Sendable (Request, BasicRequestContext, FakeRequest.Endpoint) async throws -> Response = { request, context, endpoint in
            let environment = context.parameters.get("environment") ?? ""
            let transactionId = context.parameters.get("transactionId") ?? ""
            guard let token = await Self.checkedToken(request, keys: keys, bundleIdentifier: bundleIdentifier) else {
                await ledger.rejected()
                return Response(status: .unauthorized)
            }
            var query: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { query[String(name)] = String(value) }
            var fake = FakeRequest(environment: environment, endpoint: endpoint, transactionId: transactionId, query: query)
            if request.method == .post {
                fake.body = String(buffer: try await request.body.collect(upTo: 64 * 1024))
            }
            await ledger.record(fake, token: token)
            let answer = try await respond(fake)
            if answer.delay > .zero { try await Task.sleep(for: answer.delay) }
            if answer.hang {
                let end = ContinuousClock.now + .seconds(10)
                while await !ledger.released, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
            }
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (name, value) in answer.headers {
                if let field = HTTPField.Name(name) { fields[field] = value }
            }
            return Response(status: answer.status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
        }
        router.get("{environment}/inApps/v1/subscriptions/{transactionId}") { request, context in
            try await handle(request, context, .statuses)
        }
        router.get("{environment}/inApps/v2/history/{transactionId}") { request, context in
            try await handle(request, context, .history)
        }
        router.post("{environment}/inApps/v1/notifications/history") { request, context in
            try await handle(request, context, .notificationHistory)
        }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            guard let port = client.port else { throw FakeAppStoreError() }
            defer { Task { await ledger.release() } }
            let result = try await body(port)
            await ledger.release()
            return result
        }
    }

    /// The bearer token, if it is what Apple requires; `nil` otherwise.
    static func checkedToken(_ request: Request, keys: JWTKeyCollection, bundleIdentifier: String) async -> String? {
        guard let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer ") else { return nil }
        let token = String(authorization.dropFirst("Bearer ".count))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Data(base64URL: String(parts[0])),
            let header = try? JSONDecoder().decode(TokenHeader.self, from: headerData),
            header.alg == "ES256", header.kid == keyIdentifier, header.typ == "JWT",
            let claims = try? await keys.verify(token, as: AppStoreClaims.self),
            claims.iss.value == issuerId, claims.aud.value == ["appstoreconnect-v1"], claims.bid == bundleIdentifier,
            claims.exp.value.timeIntervalSince(claims.iat.value) <= 3600,
            claims.iat.value <= Date().addingTimeInterval(60)
        else { return nil }
        return token
    }

    private struct TokenHeader: Decodable {
        let alg: String
        let kid: String?
        let typ: String?
    }

    private struct AppStoreClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        var aud: AudienceClaim
        var bid: String

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
        }
    }
}

/// The fake could not start.
struct FakeAppStoreError: Error {}

extension Data {
    /// Decodes base64url without padding.
    public init?(base64URL: String) {
        var base64 = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        self.init(base64Encoded: base64)
    }
}
