import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferKeys
import OfferSignerServer
import OfferSigning
import OfferStore
import Prometheus
import Testing
import Yams
import OfferApplication

/// The OpenAPI document served at `/openapi.yaml` and the router cannot drift apart: every route the fully
/// configured router registers is described, and every operation described is registered. The document served
/// is the file `Sources/OfferSignerServer/OpenAPI/openapi.yaml` as it is.
@Suite struct OpenAPIContractTests {
    /// `METHOD /path/{parameter}` for every route of a router with every optional part switched on.
    private static func registeredOperations() async throws -> Set<String> {
        let (router, store) = try await fullRouter()
        try await store.close()
        return Set(router.routes.map { route in
            let path = route.path.description.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            return "\(route.method.rawValue) /\(path)"
        })
    }

    /// A router with every optional part switched on (admin, key manager, metrics, the demo's routes), and its store.
    private static func fullRouter() async throws -> (Router<OfferSignerRequestContext>, any OfferStore) {
        let store = try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
        let key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
        let service = OfferService(apps: [AppConfiguration(bundleIdentifier: "com.example.app")], keyRing: try KeyRing(keys: [.init(key: key, source: "test")]), store: store)
        let manager = try await KeyManager(
            holder: service.keys, loadKeys: { [.init(key: key, source: "test")] }, configuredActiveKeyIdentifier: "TESTKEY001",
            stateStore: InMemoryKeyStateStore(), logger: Logger(label: "test"))
        let signer = TestJWSSigner(chain: try TestCertificateChain())
        let router = buildRouter(
            service: service, keyManager: manager, adminTokens: try BearerTokens(parsing: "t:0123456789abcdef0123"), metricsRegistry: PrometheusCollectorRegistry(),
            demo: DemoAppStore(root: signer.chain.root) { try await signer.sign($0) })
        return (router, store)
    }

    /// `METHOD /path` for every operation of the served document.
    private static func documentedOperations() async throws -> (operations: Set<String>, document: [String: Any]) {
        let text = try await TestService().application.test(.router) { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            return response.text
        }
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: Any])
        var operations: Set<String> = []
        for (path, item) in paths {
            for method in (item as? [String: Any])?.keys ?? [:].keys where ["get", "post", "put", "delete", "patch"].contains(method) {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return (operations, document)
    }

    @Test func everyRegisteredRouteIsDocumentedAndEveryDocumentedOneIsRegistered() async throws {
        let registered = try await Self.registeredOperations()
        let (documented, _) = try await Self.documentedOperations()
        #expect(!registered.isEmpty)
        for operation in registered.subtracting(documented).sorted() {
            Issue.record("\(operation) is registered but /openapi.yaml does not describe it")
        }
        for operation in documented.subtracting(registered).sorted() {
            Issue.record("\(operation) is described in /openapi.yaml but no route serves it")
        }
    }

    @Test func theFileIsServedAsItIs() async throws {
        let served = try await TestService().application.test(.router) { client in
            try await client.execute(uri: "/openapi.yaml", method: .get).text
        }
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/OfferSignerServer/OpenAPI/openapi.yaml")
        #expect(served == (try String(contentsOf: file, encoding: .utf8)))
    }

    /// Every documented operation, sent malformed bodies of the wrong shapes and types: each error it answers
    /// says what to do in plain words — never a Swift type name, never an empty field name.
    @Test func noErrorOfAnyOperationNamesASwiftType() async throws {
        let (router, store) = try await Self.fullRouter()
        let (operations, _) = try await Self.documentedOperations()
        let bodies = [
            "[1]", "{}", "\"text\"",
            #"{"productIdentifier":{"a":1},"offerIdentifier":[1],"applicationUsername":1.5,"signedPayload":{},"event":[],"flags":[1],"format":"xml","transactionId":true,"expiresInDays":"soon","state":7}"#,
        ]
        let typeNames = ["Dictionary", "Array<", "String.Type", "Optional", "Swift.", "DecodingError", "Int64", "OfferSignatureFormat", "CodingKeys", "keyNotFound", "typeMismatch"]
        let checked = try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            var checked = 0
            for operation in operations.sorted() {
                let parts = operation.split(separator: " ", maxSplits: 1)
                let method = HTTPRequest.Method(String(parts[0]))!
                let path = parts[1].replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
                for body in method == .get || method == .delete ? [nil] : bodies.map(Optional.some) {
                    let response = try await client.execute(
                        uri: path, method: method,
                        headers: [.contentType: "application/json", .authorization: "Bearer 0123456789abcdef0123"],
                        body: body.map { ByteBuffer(string: $0) })
                    guard response.status.code >= 400, response.headers[.contentType]?.hasPrefix("application/json") == true else { continue }
                    let error = try response.decode(ErrorBody.self).error
                    checked += 1
                    #expect(!error.message.isEmpty, "\(operation): an empty message")
                    #expect(error.field.map { !$0.isEmpty } ?? true, "\(operation) \(body ?? ""): an empty field name")
                    for word in typeNames {
                        #expect(!error.message.contains(word), "\(operation) \(body ?? ""): \(error.message)")
                    }
                }
            }
            return checked
        }
        #expect(checked > 40)
        try await store.close()
    }
}
