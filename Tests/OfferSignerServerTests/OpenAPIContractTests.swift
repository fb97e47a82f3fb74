import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferKeys
import OfferModel
import OfferSignerDemo
import OfferSignerServer
import OfferSigning
import OfferStore
import Prometheus
import Testing
import Yams

/// The OpenAPI document served at `/openapi.yaml` and the router cannot drift apart: every route the fully
/// configured router registers is described, and every operation described is registered — with the demo's
/// routes and without them. The document served is the file `Sources/OfferSignerServer/OpenAPI/openapi.yaml`
/// as it is, less the demo's entries when the demo is off.
@Suite struct OpenAPIContractTests {
    /// `METHOD /path/{parameter}` for every route of `router`.
    private static func registeredOperations(_ router: Router<OfferSignerRequestContext>) -> Set<String> {
        Set(
            router.routes.map { route in
                let path = route.path.description.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(
                    separator: "/"
                )
                return "\(route.method.rawValue) /\(path)"
            }
        )
    }

    /// A router with every optional part switched on (admin, key manager, metrics, and the demo's routes when
    /// `demo`), and its store.
    private static func fullRouter(demo: Bool = true) async throws -> (Router<OfferSignerRequestContext>, any OfferStore) {
        let store = try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
        let key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
        let service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: "com.example.app")],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            store: store
        )
        let manager = try await KeyManager(
            holder: service.keys,
            loadKeys: { [.init(key: key, source: "test")] },
            configuredActiveKeyIdentifier: "TESTKEY001",
            stateStore: InMemoryKeyStateStore(),
            logger: Logger(label: "test")
        )
        let signer = TestJWSSigner(chain: try TestCertificateChain())
        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: service, keyManager: manager),
            adminTokens: try BearerTokens(parsing: "t:0123456789abcdef0123"),
            metricsRegistry: PrometheusCollectorRegistry(),
            addOn: demo ? DemoAppStore(root: signer.chain.root) { try await signer.sign($0) }.addOn : nil
        )
        return (router, store)
    }

    /// The text `router` serves at `/openapi.yaml`.
    private static func servedDocument(_ router: Router<OfferSignerRequestContext>) async throws -> String {
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("application/yaml") == true)
            return response.text
        }
    }

    /// `METHOD /path` for every operation of a document, and the document.
    private static func documentedOperations(_ text: String) throws -> (operations: Set<String>, document: [String: Any]) {
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

    @Test(arguments: [true, false])
    func everyRegisteredRouteIsDocumentedAndEveryDocumentedOneIsRegistered(demo: Bool) async throws {
        let (router, store) = try await Self.fullRouter(demo: demo)
        let registered = Self.registeredOperations(router)
        let (documented, _) = try Self.documentedOperations(try await Self.servedDocument(router))
        try await store.close()
        #expect(!registered.isEmpty)
        #expect(registered.contains("POST /demo/notifications") == demo)
        for operation in registered.subtracting(documented).sorted() {
            Issue.record("\(operation) is registered but /openapi.yaml does not describe it")
        }
        for operation in documented.subtracting(registered).sorted() {
            Issue.record("\(operation) is described in /openapi.yaml but no route serves it")
        }
    }

    /// The file in the repository, byte for byte.
    private static func file() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/OfferSignerServer/OpenAPI/openapi.yaml")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test func withTheDemoTheFileIsServedAsItIs() async throws {
        let (router, store) = try await Self.fullRouter(demo: true)
        let served = try await Self.servedDocument(router)
        try await store.close()
        #expect(served == (try Self.file()))
    }

    /// Without the demo, the document is the file less the demo's path items and components, and nothing else:
    /// the same document once the demo's entries are taken out of the parsed file, every reference resolving.
    @Test func withoutTheDemoItsRoutesAndComponentsAreLeftOutAndNothingElse() async throws {
        let (router, store) = try await Self.fullRouter(demo: false)
        let served = try await Self.servedDocument(router)
        try await store.close()
        let file = try Self.file()
        #expect(served.hasSuffix("\n"))
        #expect(!served.contains("/demo/") && !served.contains("Demo"))
        // Only whole lines of the file were left out.
        var lines = file.split(separator: "\n", omittingEmptySubsequences: false)[...]
        for line in served.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let index = lines.firstIndex(of: line) else {
                Issue.record("served without the demo but not in the file, in this order: \(line)")
                return
            }
            lines = lines[(index + 1)...]
        }

        var expected = try #require(try Yams.load(yaml: file) as? [String: Any])
        var paths = try #require(expected["paths"] as? [String: Any])
        let demoPaths = paths.keys.filter { $0.hasPrefix("/demo/") }
        #expect(demoPaths.sorted() == ["/demo/notifications", "/demo/retention"])
        for path in demoPaths { paths[path] = nil }
        expected["paths"] = paths
        var components = try #require(expected["components"] as? [String: Any])
        for (section, entries) in components {
            guard var entries = entries as? [String: Any] else { continue }
            for name in entries.keys where name.hasPrefix("Demo") { entries[name] = nil }
            components[section] = entries
        }
        expected["components"] = components
        let document = try #require(try Yams.load(yaml: served) as? [String: Any])
        #expect(try Self.canonical(document) == (try Self.canonical(expected)))

        // Every $ref of the document without the demo names a component it still holds.
        let references = served.matches(of: /\$ref: "#\/components\/([A-Za-z]+)\/([A-Za-z]+)"/).map { (String($0.1), String($0.2)) }
        #expect(!references.isEmpty)
        for (section, name) in references {
            #expect((components[section] as? [String: Any])?[name] != nil, "\(section)/\(name) is referred to but left out")
        }
    }

    /// A parsed document as JSON with sorted keys, to compare two.
    private static func canonical(_ document: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
    }

    /// Every documented operation, sent malformed bodies of the wrong shapes and types: each error it answers
    /// says what to do in plain words — never a Swift type name, never an empty field name.
    @Test func noErrorOfAnyOperationNamesASwiftType() async throws {
        let (router, store) = try await Self.fullRouter()
        let (operations, _) = try Self.documentedOperations(try await Self.servedDocument(router))
        let bodies = [
            "[1]", "{}", "\"text\"",
            #"""
            {"productIdentifier":{"a":1},"offerIdentifier":[1],"applicationUsername":1.5,"signedPayload":{},"event":[],"flags":[1],\#
            "format":"xml","transactionId":true,"expiresInDays":"soon","state":7}
            """#,
        ]
        let typeNames = [
            "Dictionary", "Array<", "String.Type", "Optional", "Swift.", "DecodingError", "Int64", "OfferSignatureFormat", "CodingKeys",
            "keyNotFound", "typeMismatch",
        ]
        let checked = try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            var checked = 0
            for operation in operations.sorted() {
                let parts = operation.split(separator: " ", maxSplits: 1)
                let method = HTTPRequest.Method(String(parts[0]))!
                let path = parts[1].replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
                for body in method == .get || method == .delete ? [nil] : bodies.map(Optional.some) {
                    let response = try await client.execute(
                        uri: path,
                        method: method,
                        headers: [.contentType: "application/json", .authorization: "Bearer 0123456789abcdef0123"],
                        body: body.map { ByteBuffer(string: $0) }
                    )
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
