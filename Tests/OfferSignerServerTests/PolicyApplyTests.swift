import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Testing

@testable import OfferSignerServer

/// One policy for the fleet (docs/policy.md "Applying a policy"): applied to the store, put in force on every
/// replica sharing it.
@Suite struct PolicyApplyTests {
    static let token = "0123456789abcdef0123"
    static let product = "com.example.monthly"

    /// A policy for `bundle` whose `winback` offer is capped at `cap`.
    static func policy(_ bundle: String, cap: Int) throws -> OfferPolicy {
        try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    products:
                      - productIdentifier: \(product)
                        offers:
                          - offerIdentifier: winback
                            rules: [{ cap: { count: \(cap), days: 30 } }]
                """
        )
    }

    static func bundle() -> String { "com.example.apply-\(UUID().uuidString.prefix(8).lowercased())" }

    @Test("a later revision replaces the policy in force; an earlier or equal one does not")
    func holderKeepsTheLatest() throws {
        let bundle = Self.bundle()
        let file = try Self.policy(bundle, cap: 1)
        let holder = PolicyHolder(PolicyInForce(policy: file))
        #expect(holder.current.source == "file")
        let second = try Self.policy(bundle, cap: 2)
        #expect(holder.replace(with: PolicyInForce(policy: second, revision: 2)))
        #expect(!holder.replace(with: PolicyInForce(policy: file, revision: 1)))
        #expect(!holder.replace(with: PolicyInForce(policy: file, revision: 2)))
        #expect(holder.policy?.version == second.version)
        #expect(holder.current.revision == 2 && holder.current.source == "store")
    }

    @Test("apply writes revisions by compare-and-set; the same policy again changes nothing", arguments: StoreBackend.available)
    func applyRevisions(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        let bundle = Self.bundle()
        let document = StorePolicy(store: store, documentName: "policy-test-\(bundle)")
        #expect(try await document.load() == nil)
        let first = try Self.policy(bundle, cap: 1)
        let second = try Self.policy(bundle, cap: 2)
        #expect(try await document.apply(first) == .init(revision: 1, previousVersion: nil, changed: true))
        #expect(try await document.apply(first) == .init(revision: 1, previousVersion: first.version, changed: false))
        #expect(try await document.apply(second) == .init(revision: 2, previousVersion: first.version, changed: true))
        let loaded = try #require(try await document.load())
        #expect(loaded.revision == 2 && loaded.policy?.version == second.version)
        try await store.close()
    }

    @Test(
        "applies racing from two stores on one database each win a revision of their own",
        arguments: StoreBackend.available.filter { $0 == .postgres }
    )
    func racingApplies(_ backend: StoreBackend) async throws {
        let (one, two) = (try await backend.open(), try await backend.open())
        let bundle = Self.bundle()
        let name = "policy-test-\(bundle)"
        let policies = try (1...4).map { try Self.policy(bundle, cap: $0) }
        let results = try await withThrowingTaskGroup(of: StorePolicy.Applied.self) { group in
            for (index, policy) in policies.enumerated() {
                group.addTask { try await StorePolicy(store: index % 2 == 0 ? one : two, documentName: name).apply(policy) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.revision)) == Set(1...4))
        let loaded = try #require(try await StorePolicy(store: one, documentName: name).load())
        #expect(loaded.revision == 4)
        try await one.close()
        try await two.close()
    }

    @Test(
        "a policy applied through one store is put in force by the other replica's refresher",
        arguments: StoreBackend.available.filter { $0 == .postgres }
    )
    func otherReplicaFollows(_ backend: StoreBackend) async throws {
        let (one, two) = (try await backend.open(), try await backend.open())
        let bundle = Self.bundle()
        let name = "policy-test-\(bundle)"
        let holder = PolicyHolder(PolicyInForce(policy: try Self.policy(bundle, cap: 1)))
        // The poll an hour apart: only the store's push can bring the change within the test's wait.
        let refresher = PolicyRefresher(
            holder: holder,
            document: StorePolicy(store: two, documentName: name),
            interval: .seconds(3_600),
            changes: { two.documentChanges() },
            servedApps: [bundle],
            logger: Logger(label: "test")
        )
        let task = Task { try await refresher.run() }
        // The listener is up once a first change goes through (it reconnects and re-reads meanwhile).
        let applied = try Self.policy(bundle, cap: 3)
        _ = try await StorePolicy(store: one, documentName: name).apply(try Self.policy(bundle, cap: 2))
        let deadline = ContinuousClock.now + .seconds(30)
        while holder.current.revision == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(holder.current.revision >= 1)
        let next = holder.current.revision + 1
        _ = try await StorePolicy(store: one, documentName: name).apply(applied)
        while holder.current.revision < next, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(holder.policy?.version == applied.version)
        task.cancel()
        _ = await task.result
        try await one.close()
        try await two.close()
    }

    func router(_ service: SigningPipeline) throws -> Router<OfferSignerRequestContext> {
        buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil), adminTokens: try BearerTokens(parsing: "carol:\(Self.token)"))
    }

    func request(
        _ client: some TestClientProtocol,
        _ method: HTTPRequest.Method,
        _ uri: String,
        _ body: String? = nil,
        token: String? = Self.token
    ) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/yaml"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    // SQLite only: over HTTP the default document is written, which on the shared test database every later test's
    // server would start with.
    @Test("PUT /admin/policy validates as policy check does, applies, audits; the signing path and /readyz follow at once")
    func applyOverHTTP() async throws {
        let store = try await StoreBackend.sqlite.open()
        let bundle = Self.bundle()
        let first = try Self.policy(bundle, cap: 1)
        let keyRing = try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")])
        let service = SigningPipeline(apps: [], keyRing: keyRing, policy: first, store: store)
        let invalid =
            """
            apps:\n  - bundleIdentifier: \(bundle)\n    products: [{ productIdentifier: p, offers: [{ offerIdentifier: o, rules: [{ cap: { \
            count: 0, days: 30 } }] }] }]\n
            """
        let expected: String
        do {
            _ = try OfferPolicy(text: invalid)
            Issue.record("the policy should be invalid")
            return
        } catch {
            expected = error.message
        }
        func sign(_ customer: String) async -> Bool {
            (try? await service.signing.signLegacy(
                SignOfferRequest(bundleIdentifier: bundle, productIdentifier: Self.product, offerIdentifier: "winback", applicationUsername: customer)
            )) != nil
        }
        #expect(await sign("customer-1"))
        #expect(await !sign("customer-1"))  // capped at 1
        try await Application(router: try router(service), logger: Logger(label: "test")).test(.router) { client in
            #expect(try await request(client, .put, "/admin/policy", Self.policy(bundle, cap: 2).text, token: nil).status == .unauthorized)
            let refused = try await request(client, .put, "/admin/policy", invalid)
            #expect(refused.status == .badRequest)
            let error = try refused.decode(ErrorBody.self)
            #expect(error.error.code == "invalid_policy" && error.error.message == expected)
            var ready =
                try JSONSerialization.jsonObject(with: Data(try await request(client, .get, "/readyz").body.readableBytesView)) as? [String: Any]
            #expect((ready?["policy"] as? [String: Any])?["source"] as? String == "file")

            let second = try Self.policy(bundle, cap: 2)
            let response = try await request(client, .put, "/admin/policy", second.text)
            #expect(response.status == .ok)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            #expect(answer["version"] as? String == second.version && answer["revision"] as? Int == 1 && answer["source"] as? String == "store")
            ready = try JSONSerialization.jsonObject(with: Data(try await request(client, .get, "/readyz").body.readableBytesView)) as? [String: Any]
            #expect((ready?["policy"] as? [String: Any])?["version"] as? String == second.version)
            let shown = try #require(
                try JSONSerialization.jsonObject(with: Data(try await request(client, .get, "/admin/policy").body.readableBytesView))
                    as? [String: Any]
            )
            #expect(shown["revision"] as? Int == 1)
        }
        #expect(await sign("customer-1"))  // the cap is 2 now
        #expect(await !sign("customer-1"))
        let audit = try await store.auditEvents(limit: 100, since: Date().addingTimeInterval(-600))
        #expect(
            audit.contains {
                $0.action == "policy.apply" && $0.actor == "carol" && $0.details["revision"] == "1" && $0.details["previousVersion"] == "none"
            }
        )
        #expect(try await StorePolicy(store: store).load()?.policy?.version == (try Self.policy(bundle, cap: 2)).version)
        try await store.close()
    }

    @Test("without a store, applying a policy is refused and says what to do instead")
    func applyNeedsAStore() async throws {
        let bundle = Self.bundle()
        let keyRing = try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")])
        let service = SigningPipeline(apps: [], keyRing: keyRing, policy: try Self.policy(bundle, cap: 1))
        do {
            let policies = OfferSignerUseCases(pipeline: service, keyManager: nil).policy
            _ = try await policies.apply(try Self.policy(bundle, cap: 2), by: "carol", logger: Logger(label: "test"))
            Issue.record("applying without a store should be refused")
        } catch let error as OfferServiceError {
            let error = APIError(error)
            #expect(error.status == .unprocessableContent && error.code.rawValue == "policy_needs_store")
            #expect(error.message.contains("OFFER_SIGNER_POLICY"))
        }
        #expect(service.policyHolder.current.revision == 0)
    }
}
