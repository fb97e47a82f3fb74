import AppStoreTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import OfferKeys
import OfferSignerServer
import OfferSigning
import OfferStore
import Prometheus
import Testing
import Yams

/// The OpenAPI document served at `/openapi.yaml` and the router cannot drift apart: every route the fully
/// configured router registers is described, and every operation described is registered.
@Suite struct OpenAPIContractTests {
    /// `METHOD /path/{parameter}` for every route of a router with every optional part switched on.
    private static func registeredOperations() async throws -> Set<String> {
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
        try await store.close()
        return Set(router.routes.map { route in
            let path = route.path.description.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            return "\(route.method.rawValue) /\(path)"
        })
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
}
