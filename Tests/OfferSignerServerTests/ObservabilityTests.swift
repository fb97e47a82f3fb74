import AppStoreNotifications
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Synchronization
import Testing

@testable import OfferApplication

/// Every line a logger wrote, as the JSON handler renders it.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])

    var all: [String] { lines.withLock { $0 } }

    /// A logger at `trace` writing JSON lines here, with the request ID of the request being handled.
    func logger(_ label: String = "scan") -> Logger {
        Logger(label: label) { label in
            var handler = JSONLogHandler(label: label, metadataProvider: RequestMetadata.provider) { line in
                self.lines.withLock { $0.append(line) }
            }
            handler.logLevel = .trace
            return handler
        }
    }

    /// The lines as JSON objects.
    func objects() throws -> [[String: String]] {
        try all.map { line in
            try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "not a JSON object of strings: \(line)")
        }
    }
}

@Suite struct JSONLogHandlerTests {
    @Test("one JSON object per line: time, level, label, message, then the metadata as strings, escaped")
    func lineFormat() throws {
        let line = JSONLogHandler.line(
            time: Date(timeIntervalSince1970: 1_767_323_045.678_9),
            level: .warning,
            label: "offer-signer",
            message: "a \"quoted\"\nsecond line\t\u{01}\\ é 🙂",
            metadata: ["status": .stringConvertible(403), "message": "shadowed", "nested": .dictionary(["a": "b"]), "zero": "\u{2028}"]
        )
        #expect(!line.contains("\n"))
        #expect(
            line.hasPrefix(
                #"{"time":"2026-01-02T03:04:05.678Z","level":"warning","label":"offer-signer","#
                    + #""message":"a \"quoted\"\nsecond line\t\u0001\\ é 🙂","#
            )
        )
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["message"] == "a \"quoted\"\nsecond line\t\u{01}\\ é 🙂")
        #expect(object["metadata.message"] == "shadowed")
        #expect(object["status"] == "403")
        #expect(object["nested"] == #"["a": "b"]"#)
        #expect(object["zero"] == "\u{2028}")
        #expect(object["level"] == "warning" && object["label"] == "offer-signer")
    }

    @Test("metadata: the handler's, the provider's, then the line's own, a later one winning a key, keys sorted")
    func metadataPrecedence() throws {
        let lines = Mutex<[String]>([])
        let provider = Logger.MetadataProvider { ["b": "provider", "c": "provider", "p": "only-provider"] }
        var handler = JSONLogHandler(label: "t", metadataProvider: provider) { line in lines.withLock { $0.append(line) } }
        handler.metadata = ["a": "handler", "b": "handler", "c": "handler", "h": "only-handler"]
        var logger = Logger(label: "t") { _ in handler }
        logger[metadataKey: "z"] = "logger"
        logger.info("m", metadata: ["c": "own", "o": "only-own", "d": .stringConvertible(4)])
        let line = try #require(lines.withLock { $0.first })
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["a"] == "handler" && object["h"] == "only-handler" && object["z"] == "logger")
        #expect(object["b"] == "provider" && object["p"] == "only-provider")
        #expect(object["c"] == "own" && object["o"] == "only-own" && object["d"] == "4")
        // Each key once, in order after the four fixed fields.
        let keys = line.split(separator: ",").compactMap {
            $0.split(separator: ":").first.map { String($0).trimmingCharacters(in: CharacterSet(charactersIn: "{\"")) }
        }
        #expect(Array(keys.dropFirst(4)) == ["a", "b", "c", "d", "h", "o", "p", "z"])
    }

    @Test("the time is RFC 3339 in UTC with milliseconds")
    func time() {
        #expect(JSONLogHandler.rfc3339(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(JSONLogHandler.rfc3339(Date(timeIntervalSince1970: 951_782_400.5)) == "2000-02-29T00:00:00.500Z")
    }

    @Test("LOG_FORMAT: json or text; unset, json unless standard error is a terminal; anything else stops start-up")
    func logFormat() throws {
        #expect(try LogFormat.configured([:], standardErrorIsTerminal: false) == .json)
        #expect(try LogFormat.configured([:], standardErrorIsTerminal: true) == .text)
        #expect(try LogFormat.configured(["LOG_FORMAT": "JSON"], standardErrorIsTerminal: true) == .json)
        #expect(try LogFormat.configured(["LOG_FORMAT": "text"], standardErrorIsTerminal: false) == .text)
        #expect(throws: ConfigurationError.self) { try LogFormat.configured(["LOG_FORMAT": "logfmt"]) }
        #expect(ConfigurationVariable.logFormat.environmentName == "LOG_FORMAT")
        #expect(ConfigurationVariable.logHashKey.environmentName == "OFFER_SIGNER_LOG_HASH_KEY")
        #expect(ConfigurationVariable.logHashKey.isSecret)
        #expect(throws: ConfigurationError.self) { try configuredLogHashKey(["OFFER_SIGNER_LOG_HASH_KEY": "short"]) }
        #expect(try configuredLogHashKey(["OFFER_SIGNER_LOG_HASH_KEY": "0123456789abcdef0123"]) == "0123456789abcdef0123")
        #expect(try configuredLogHashKey([:]) == nil)
    }

    @Test("a customer's hash: 12 hex characters, the same for the same customer in any case, different for another")
    func customerHash() {
        let hash = CustomerHash.of("User-0001")
        #expect(hash.count == 12 && hash.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(CustomerHash.of("user-0001") == hash)
        #expect(CustomerHash.of("user-0002") != hash)
        #expect(CustomerHash.of(CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "USER-0001")) == "com.example.app/\(hash)")
        // With a configured key, what docs/observability.md's openssl command prints for the lower-cased value (its
        // first 12 characters; computed with Python's hmac).
        let keyed = HMAC<SHA256>(key: SymmetricKey(data: Data("log-hash-key-0123456789".utf8)))
        #expect(CustomerHash.of("USER-0001", with: keyed) == "7b77080df240")
        #expect(CustomerHash.of("user-0001", with: keyed) == "7b77080df240")
    }
}

@Suite struct RequestIDTests {
    static let header = HTTPField.Name("X-Request-Id")!

    @Test("a well-formed X-Request-Id is kept; anything else is replaced by a new ID")
    func wellFormed() async throws {
        #expect(try await RequestLoggingMiddlewareProbe.id("abc-123_DEF.9") == "abc-123_DEF.9")
        #expect(try await RequestLoggingMiddlewareProbe.id(String(repeating: "a", count: 64)) == String(repeating: "a", count: 64))
        for bad in [nil, "", String(repeating: "a", count: 65), "a b", "é", "a/b", "{\"x\":1}"] {
            let id = try await RequestLoggingMiddlewareProbe.id(bad)
            #expect(id != bad && UUID(uuidString: id) != nil)
        }
    }

    @Test("every response carries X-Request-Id, errors included; every line of the request carries it")
    func onEveryResponse() async throws {
        let lines = LogLines()
        let test = try TestService()
        let manager = try await KeyManager(
            holder: test.service.keys,
            loadKeys: { [.init(key: test.key, source: "test")] },
            configuredActiveKeyIdentifier: nil,
            stateStore: InMemoryKeyStateStore(),
            logger: lines.logger()
        )
        let app = Application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: test.service, keyManager: manager)), logger: lines.logger())
        try await app.test(.router) { client in
            let ok = try await client.execute(uri: "/healthz", method: .get, headers: [Self.header: "client-id-1"])
            #expect(ok.status == .ok && ok.headers[Self.header] == "client-id-1")
            let generated = try await client.execute(uri: "/healthz", method: .get)
            #expect(UUID(uuidString: try #require(generated.headers[Self.header])) != nil)
            let notFound = try await client.execute(uri: "/v1/nothing/here", method: .get, headers: [Self.header: "client-id-2"])
            #expect(notFound.status == .notFound && notFound.headers[Self.header] == "client-id-2")
            let malformed = try await client.post("/v1/offers/sign", json: "{")
            #expect(malformed.status == .badRequest && malformed.headers[Self.header] != nil)
            let admin = try await client.execute(uri: "/admin/keys", method: .get, headers: [Self.header: "client-id-3"])
            #expect(admin.status == .unauthorized && admin.headers[Self.header] == "client-id-3")
            #expect(try admin.decode(ErrorBody.self).error.code == "unauthorized")
        }
        let objects = try lines.objects()
        let access = objects.filter { $0["message"] == "request" }
        #expect(access.count == 5)
        #expect(access.first { $0["requestId"] == "client-id-2" }?["route"]?.contains("nothing") == false)  // never the raw path
        #expect(access.first { $0["requestId"] == "client-id-2" }?["status"] == "404")
        #expect(access.first { $0["requestId"] == "client-id-1" }?["route"] == "/healthz")
        #expect(access.allSatisfy { $0["method"] != nil && $0["durationMs"].flatMap(Double.init) != nil && $0["level"] == "info" })
        // The admin authentication's own warning carries the ID too.
        #expect(objects.contains { $0["message"] == "admin authentication failed" && $0["requestId"] == "client-id-3" })
    }
}

/// The ID a response carries for a client's `X-Request-Id` (the middleware is internal).
enum RequestLoggingMiddlewareProbe {
    static func id(_ client: String?) async throws -> String {
        let app = Application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: try TestService().service, keyManager: nil)),
            logger: Logger(label: "probe") { _ in SwiftLogNoOpLogHandler() }
        )
        return try await app.test(.router) { http in
            var headers = HTTPFields()
            if let client { headers[RequestIDTests.header] = client }
            return try await http.execute(uri: "/healthz", method: .get, headers: headers).headers[RequestIDTests.header] ?? ""
        }
    }
}

/// A full run at `trace` level — signing, refusals, a JWS, introductory eligibility, a notification, a signed
/// transaction, admin calls (flags, grant, customer, signatures, audit, keys), errors — with every line captured;
/// no line may contain a PEM line of the key, the admin token, a client's bearer token or a raw
/// `applicationUsername` used.
@Suite struct LogScanTests {
    static let adminToken = "scan-admin-token-6d1f0c2b9a8e7f"
    static let wrongAdminToken = "scan-wrong-token-0a9b8c7d6e5f"
    static let clientToken = "scan-client-api-key-3e4f5a6b7c8d"
    static let wrongClientToken = "scan-stolen-api-key-9f8e7d6c5b4a"
    static let jwtSecret = "scan-jwt-secret-0123456789abcdef0123456789abcdef"

    @Test("no secret and no raw customer in the log of a full run", arguments: StoreBackend.available)
    func scan(_ backend: StoreBackend) async throws {
        let lines = LogLines()
        let logger = lines.logger()
        let bundle = "com.example.scan-\(UUID().uuidString.prefix(8).lowercased())"
        // Customers in mixed case: neither the value sent nor its lower-cased form may be logged.
        let customers = ["Scan-Customer-7F3A9", "5C0FFEE0-AAAA-4BBB-8CCC-DDDDEEEEFFFF", "scan.newcomer-42", "Scan-Admin-Target-X"]
        let (sent, notified, withTransaction, adminTarget) = (customers[0], customers[1], customers[2], customers[3])

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-scan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = try SigningKey.generate(keyIdentifier: "SCANKEY001")
        let pem = key.pkcs8PEMRepresentation
        try pem.write(to: folder.appendingPathComponent("SubscriptionKey_SCANKEY001.p8"), atomically: true, encoding: .utf8)

        let store: any OfferStore
        switch backend {
        case .sqlite:
            store = try await makeOfferStore(databaseURL: "sqlite:\(folder.appendingPathComponent("scan.sqlite").path)", logger: logger)
        case .postgres:
            store = try await makeOfferStore(databaseURL: try #require(StoreBackend.postgresStoreURL), logger: logger)
        }
        var options = TestCertificateChain.Options()
        options.leafValidity = Date().addingTimeInterval(-365 * 86_400)...Date().addingTimeInterval(365 * 86_400)
        let chain = try TestCertificateChain(options)
        let signer = TestJWSSigner(chain: chain)
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
                    products:
                      - productIdentifier: \(TestPayloads.productIdentifier)
                        subscriptionGroupIdentifier: "21000001"
                        introductoryOffer:
                          rules: [never-had-introductory-offer]
                        offers:
                          - offerIdentifier: winback_50
                            rules: [app-store-subscriber, { lapsed: { minDays: 0, maxDays: 365 } }]
                          - offerIdentifier: sorry
                            rules: [customer-service-grant]
                          - offerIdentifier: once
                            rules: [{ cap: { count: 1, days: 30 } }]
                          - offerIdentifier: everyone
                """
        )
        let verifier = try SignedDataVerifier(bundleIdentifier: bundle, environments: [.sandbox], trustedRoots: [chain.root])
        // Readable customer names as appAccountToken, as the demo's stand-in App Store sends them.
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: logger, readableTokens: true)
        let loadKeys: @Sendable () throws -> [KeyRing.Entry] = { try KeyLoader.loadDirectory(folder.path) }
        let service = SigningPipeline(apps: [], keyRing: try KeyRing(keys: try loadKeys()), policy: policy, store: store, notifications: ingestor)
        let manager = try await KeyManager(
            holder: service.keys,
            loadKeys: loadKeys,
            configuredActiveKeyIdentifier: nil,
            stateStore: StoreKeyStateStore(store: store, documentName: "scan-\(bundle)"),
            logger: logger
        )
        let app = Application(
            router: buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: manager),
                adminTokens: try BearerTokens(parsing: "carol:\(Self.adminToken)"),
                authenticator: try await ClientAuthenticator(
                    ClientAuthConfiguration(apiKeys: try BearerTokens(parsing: "backend:\(Self.clientToken)"), jwtSecret: Self.jwtSecret)
                )
            ),
            logger: logger
        )

        let counter = Atomic<Int>(0)
        try await app.test(.router) { client in
            func call(
                _ method: HTTPRequest.Method,
                _ uri: String,
                _ body: String? = nil,
                token: String? = Self.clientToken,
                id: String? = nil
            ) async throws -> TestResponse {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let token { headers[.authorization] = "Bearer \(token)" }
                if let id { headers[RequestIDTests.header] = id }
                counter.add(1, ordering: .relaxed)
                return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
            }
            func sign(_ offer: String, _ username: String, extra: String = "") async throws -> TestResponse {
                try await call(
                    .post,
                    "/v1/offers/sign",
                    #"""
                    {"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"\#(offer)",\#
                    "applicationUsername":"\#(username)"\#(extra)}
                    """#
                )
            }
            func admin(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
                try await call(method, uri, body, token: Self.adminToken, id: "admin-call")
            }

            // Signing: a legacy signature, a JWS, a refusal, the cap's locked path (a yes, then a no).
            #expect(try await sign("everyone", sent).status == .ok)
            #expect(try await sign("everyone", sent, extra: #","format":"jws","transactionId":"2000000123456789""#).status == .ok)
            let refused = try await sign("winback_50", sent)
            #expect(refused.status == .forbidden)
            #expect(try await sign("once", sent).status == .ok)
            #expect(try await sign("once", sent).status == .forbidden)
            // Eligibility, introductory eligibility.
            #expect(try await call(.post, "/v1/offers/eligibility", #"{"applicationUsername":"\#(sent)"}"#).status == .ok)
            #expect(
                try await call(
                    .post,
                    "/v1/offers/introductory-eligibility",
                    #"{"productIdentifier":"\#(TestPayloads.productIdentifier)","transactionId":"2000000123456789","applicationUsername":"\#(sent)"}"#
                ).status.code < 500
            )  // decided or refused (an unknown transaction), never a failure

            // A notification for a customer known by appAccountToken, and a signed transaction with a sign request.
            let now = Date()
            var transaction = TestPayloads.transaction(
                originalTransactionId: "\(Int.random(in: 1_000_000_000...9_999_999_999))",
                appAccountToken: notified.lowercased(),
                expiresDate: now + 86_400,
                bundleIdentifier: bundle,
                signedDate: now
            )
            transaction.subscriptionGroupIdentifier = "21000001"
            let payload = try await signer.signNotification(
                .subscribed,
                subtype: .initialBuy,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction),
                bundleIdentifier: bundle,
                environment: .sandbox,
                signedDate: now
            )
            let notification = try await call(
                .post,
                "/v1/notifications/appstore",
                "{\"signedPayload\":\"\(payload)\"}",
                token: nil,
                id: "notification-1"
            )
            #expect(notification.status == .ok, "\(notification.text)")
            var lapsed = TestPayloads.transaction(
                originalTransactionId: "\(Int.random(in: 1_000_000_000...9_999_999_999))",
                appAccountToken: withTransaction,
                expiresDate: now - 10 * 86_400,
                bundleIdentifier: bundle,
                signedDate: now - 40 * 86_400
            )
            lapsed.subscriptionGroupIdentifier = "21000001"
            let signedTransaction = try await signer.sign(lapsed)
            #expect(try await sign("winback_50", withTransaction, extra: #","signedTransaction":"\#(signedTransaction)""#).status == .ok)
            // someone else's
            #expect(try await sign("winback_50", sent, extra: #","signedTransaction":"\#(signedTransaction)""#).status == .forbidden)

            // Admin: flags, a grant and its use, the customer, the signatures, the audit, the keys.
            let encodedTarget = adminTarget.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? adminTarget
            #expect(try await admin(.post, "/admin/customers/\(bundle)/\(encodedTarget)/flags", #"{"flags":{"churnRisk":"high"}}"#).status == .ok)
            #expect(
                try await admin(
                    .post,
                    "/admin/customers/\(bundle)/\(encodedTarget)/grants",
                    #"{"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"sorry"}"#
                ).status == .ok
            )
            #expect(try await sign("sorry", adminTarget).status == .ok)
            #expect(try await sign("sorry", adminTarget).status == .forbidden)
            #expect(try await admin(.get, "/admin/customers/\(bundle)/\(encodedTarget)").status == .ok)
            #expect(try await admin(.get, "/admin/signatures?bundleIdentifier=\(bundle)&applicationUsername=\(sent)").status == .ok)
            #expect(try await admin(.get, "/admin/audit?limit=50").status == .ok)
            #expect(try await admin(.get, "/admin/keys").status == .ok)
            #expect(try await admin(.post, "/admin/keys/reload").status == .ok)

            // Errors: malformed JSON, an unknown offer, an invalid customer, no such endpoint (with a customer in
            // the path), admin without a token, with a wrong one, and a forged notification.
            #expect(try await call(.post, "/v1/offers/sign", #"{"applicationUsername":"\#(sent)""#).status == .badRequest)
            #expect(try await sign("no_such_offer", sent).status == .notFound)
            #expect(try await sign("everyone", String(repeating: sent, count: 30)).status == .badRequest)
            #expect(try await call(.get, "/v1/customers/\(sent)").status == .notFound)
            #expect(try await call(.post, "/v1/offers/eligibility", #"{"applicationUsername":"\#(sent)"}"#, token: nil).status == .unauthorized)
            #expect(
                try await call(.post, "/v1/offers/eligibility", #"{"applicationUsername":"\#(sent)"}"#, token: Self.wrongClientToken).status
                    == .unauthorized
            )
            #expect(try await call(.get, "/admin/customers/\(bundle)/\(encodedTarget)", token: nil).status == .unauthorized)
            #expect(try await call(.get, "/admin/customers/\(bundle)/\(encodedTarget)", token: Self.wrongAdminToken).status == .forbidden)
            let forged = try await TestJWSSigner(chain: try TestCertificateChain()).signNotification(
                .subscribed,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction),
                bundleIdentifier: bundle
            )
            #expect(try await call(.post, "/v1/notifications/appstore", "{\"signedPayload\":\"\(forged)\"}", token: nil).status == .badRequest)
        }
        try await store.close()

        let all = lines.all
        let requests = counter.load(ordering: .relaxed)
        #expect(all.count > requests)
        var forbidden: [(String, String)] = [
            ("the admin token", Self.adminToken), ("a wrong admin token", Self.wrongAdminToken), ("the client's bearer token", Self.clientToken),
            ("a wrong client token", Self.wrongClientToken), ("the login JWT secret", Self.jwtSecret),
        ]
        for line in pem.split(separator: "\n") where !line.isEmpty { forbidden.append(("a PEM line of the key", String(line))) }
        for customer in customers {
            forbidden.append(("a raw applicationUsername", customer))
            forbidden.append(("a raw applicationUsername", customer.lowercased()))
        }
        for line in all {
            for (what, value) in forbidden where line.contains(value) {
                Issue.record("\(what) is in the log: \(line)")
            }
        }

        // Every line is JSON; one access line per request, with the route's pattern; lines of a request carry
        // its ID; the customer appears as its hash.
        let objects = try lines.objects()
        let access = objects.filter { $0["message"] == "request" }
        #expect(access.count == requests)
        #expect(access.allSatisfy { $0["requestId"] != nil && $0["status"] != nil && $0["route"] != nil })
        #expect(
            access.contains {
                $0["route"]?.hasPrefix("/admin/customers/") == true && $0["route"]?.hasSuffix("/flags") == true && $0["admin"] == "carol"
            },
            "\(access)"
        )
        #expect(
            objects.contains {
                $0["message"] == "App Store notification" && $0["requestId"] == "notification-1"
                    && $0["customer"] == "\(bundle)/\(CustomerHash.of(notified))"
            }
        )
        #expect(
            objects.contains {
                $0["message"] == "audit: customer.grant" && $0["requestId"] == "admin-call"
                    && $0["target"] == "\(bundle)/\(CustomerHash.of(adminTarget))"
            }
        )
        #expect(access.contains { $0["route"] == "/v1/offers/sign" && $0["status"] == "200" && $0["credential"] == "backend" }, "\(access)")
        #expect(objects.contains { $0["level"] == "trace" || $0["level"] == "debug" })
    }
}

@Suite struct MethodNotAllowedTests {
    @Test("a known path with another method is 405 with Allow; an unknown path stays 404")
    func wrongMethodIs405() async throws {
        try await TestService().application.test(.router) { client in
            let sign = try await client.execute(uri: "/v1/offers/sign", method: .get)
            #expect(sign.status == .methodNotAllowed)
            #expect(sign.headers[.allow] == "POST")
            #expect(try sign.decode(ErrorBody.self).error.code == "method_not_allowed")
            #expect(sign.text.contains("accepts POST"))
            let keys = try await client.execute(uri: "/v1/keys", method: .delete)
            #expect(keys.status == .methodNotAllowed && keys.headers[.allow] == "GET, HEAD")
            let unknown = try await client.execute(uri: "/v1/offers/nothing", method: .get)
            #expect(unknown.status == .notFound)
        }
    }
}

@Suite struct PlainMessageTests {
    @Test("a lone signature that is not a JWS, and a format that is not one, are explained with the allowed values")
    func verifyAndFormatMessages() async throws {
        try await TestService().application.test(.router) { client in
            let verify = try await client.execute(
                uri: "/v1/offers/verify",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"signature":"not-a-jws"}"#)
            )
            let verifyError = try verify.decode(ErrorBody.self).error
            #expect(verify.status == .badRequest && verifyError.field == "signature")
            #expect(verifyError.message.contains("not a compact JWS") && verifyError.message.contains("keyIdentifier, nonce, timestamp"))
            let sign = try await client.execute(
                uri: "/v1/offers/sign",
                method: .post,
                headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":"u","format":"xml"}"#)
            )
            let signError = try sign.decode(ErrorBody.self).error
            #expect(sign.status == .badRequest && signError.field == "format")
            #expect(signError.message.contains("\"legacy\"") && signError.message.contains("\"jws\""))
        }
    }
}
