import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// A store, an app verified against a test chain in Production, and services that ask a fake of Apple's App Store
/// Server API (on loopback) for the facts the store lacks.
struct AppStoreFactsFixture {
    let bundle: String
    let store: any OfferStore
    let signer: TestJWSSigner
    let chain: TestCertificateChain
    let appKey = P256.Signing.PrivateKey()
    let key: SigningKey
    static let adminToken = "carol-token-0123456789abcdef"
    static let group = "21000001"

    /// - Parameter chain: the chain the App Store signs with; default one valid from yesterday.
    init(_ backend: StoreBackend, chain: TestCertificateChain? = nil) async throws {
        bundle = "com.example.asapi-\(UUID().uuidString.prefix(8).lowercased())"
        store = try await backend.open()
        if let chain { self.chain = chain } else { self.chain = try TestCertificateChain() }
        signer = TestJWSSigner(chain: self.chain)
        key = try SigningKey.generate(keyIdentifier: "TESTKEY001")
    }

    func policy(_ whenUnavailable: String) throws -> OfferPolicy {
        try OfferPolicy(
            text: """
                appStoreUnavailable: \(whenUnavailable)
                apps:
                  - bundleIdentifier: \(bundle)
                    issuerIdentifier: \(FakeAppStore.issuerId)
                    appAppleId: \(FakeAppStore.appAppleId)
                    products:
                      - productIdentifier: \(TestPayloads.productIdentifier)
                        subscriptionGroupIdentifier: "\(Self.group)"
                        introductoryOffer:
                          rules: [never-had-introductory-offer]
                        offers:
                          - offerIdentifier: winback_50
                            rules: [app-store-subscriber, { lapsed: { minDays: 0, maxDays: 365 } }]
                        retention:
                          - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e05
                            rules: [active-subscriber]
                          - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03
                """
        )
    }

    /// A service whose App Store Server API client asks the fake on `port` (nil: no client, as today).
    func service(
        port: Int?,
        whenUnavailable: String = "refuse",
        timeout: Duration = .seconds(10),
        cacheTimeToLive: Duration = .seconds(60)
    ) throws -> SigningPipeline {
        let verifier = try SignedDataVerifier(
            bundleIdentifier: bundle,
            appAppleId: FakeAppStore.appAppleId,
            environments: [.production],
            trustedRoots: [chain.root]
        )
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: Logger(label: "test"))
        var clients: [String: AppStoreServerAPIClient] = [:]
        if let port {
            let settings = AppStoreAPISettings(
                keyIdentifier: FakeAppStore.keyIdentifier,
                privateKeyPEM: appKey.pemRepresentation,
                issuerId: FakeAppStore.issuerId,
                baseURL: "http://127.0.0.1:\(port)/production",
                timeout: timeout,
                cacheTimeToLive: cacheTimeToLive
            )
            let app = AppConfiguration(bundleIdentifier: bundle, issuerIdentifier: FakeAppStore.issuerId, appAppleId: FakeAppStore.appAppleId)
            var configuration = try settings.clientConfiguration(for: app, environments: [.production])
            configuration.retry.initialBackoff = .milliseconds(10)
            configuration.retry.maximumBackoff = .milliseconds(50)
            clients[bundle] = try AppStoreServerAPIClient(configuration: configuration, verifier: verifier)
        }
        return SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            policy: try policy(whenUnavailable),
            store: store,
            notifications: ingestor,
            appStoreClients: clients
        )
    }

    func application(_ service: SigningPipeline) -> some ApplicationProtocol {
        Application(
            router: buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: nil),
                adminTokens: try! BearerTokens(parsing: "carol:\(Self.adminToken)")
            ),
            logger: Logger(label: "test")
        )
    }

    func fake(_ respond: @escaping @Sendable (FakeRequest) async throws -> FakeResponse) -> FakeAppStore {
        FakeAppStore(appKey: appKey, bundleIdentifier: bundle, respond: respond)
    }

    /// A Production transaction of the app.
    func transaction(
        original: String,
        id: String? = nil,
        token: String? = nil,
        purchased: Date,
        expires: Date,
        introductory: Bool = false
    ) -> JWSTransactionDecodedPayload {
        var transaction = TestPayloads.transaction(
            originalTransactionId: original,
            transactionId: id,
            appAccountToken: token,
            purchaseDate: purchased,
            expiresDate: expires,
            bundleIdentifier: bundle,
            environment: .production
        )
        transaction.subscriptionGroupIdentifier = Self.group
        if introductory { transaction.offerType = .introductoryOffer }
        return transaction
    }

    /// What the App Store says of a subscription: its status with the latest transaction, and its history.
    struct Answer: Sendable {
        var statuses: FakeResponse
        var history: FakeResponse
        func respond(_ request: FakeRequest) -> FakeResponse { request.endpoint == .statuses ? statuses : history }
    }

    /// A subscriber who bought 100 days ago, with an introductory offer if asked, then one renewal; `status` and the
    /// last expiry as given.
    func answer(
        original: String,
        token: String? = nil,
        status: SubscriptionStatus,
        expires: Date,
        introductory: Bool = false,
        signer: TestJWSSigner? = nil
    ) async throws -> Answer {
        let purchased = Date().addingTimeInterval(-100 * 86_400)
        let first = transaction(
            original: original,
            token: token,
            purchased: purchased,
            expires: purchased.addingTimeInterval(30 * 86_400),
            introductory: introductory
        )
        var latest = transaction(
            original: original,
            id: "\(original)9",
            token: token,
            purchased: purchased.addingTimeInterval(30 * 86_400),
            expires: expires
        )
        latest.originalPurchaseDate = purchased.appStoreMilliseconds
        latest.transactionReason = .renewal
        let renewal = TestPayloads.renewalInfo(for: latest, autoRenewStatus: status == .active ? .on : .off)
        let signer = signer ?? self.signer
        return Answer(
            statuses: try await .statuses([(status, latest, renewal)], signer: signer, environment: .production, bundleIdentifier: bundle),
            history: try await .history([first, latest], signer: signer, environment: .production, bundleIdentifier: bundle)
        )
    }

    func sign(_ client: some TestClientProtocol, _ username: String, transactionId: String, format: String = "jws") async throws -> TestResponse {
        try await client.post(
            "/v1/offers/sign",
            json:
                #"""
                {"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"winback_50","applicationUsername":"\#(username)",\#
                "format":"\#(format)","transactionId":"\#(transactionId)"}
                """#
        )
    }

    func customer(_ username: String) -> CustomerKey { CustomerKey(bundleIdentifier: bundle, applicationUsername: username) }

    /// The customers of this app the store files an original transaction under (a shared PostgreSQL holds other
    /// tests' apps too).
    func owners(of originalTransactionId: String) async throws -> [CustomerKey] {
        try await store.customers(withOriginalTransactionId: originalTransactionId).filter { $0.bundleIdentifier == bundle }
    }
}

/// Counts calls to a fake's `respond`.
actor CallCounter {
    private(set) var count = 0
    func next() -> Int {
        count += 1
        return count
    }
}

@Suite struct AppStoreFactsTests {
    static let lapsed = Date().addingTimeInterval(-30 * 86_400)
    static let renewing = Date().addingTimeInterval(20 * 86_400)

    @Test(
        "a lapsed stranger with a transactionId gets the win-back offer once Apple's facts are stored; the next request asks nothing",
        arguments: StoreBackend.available
    )
    func lapsedStrangerGetsTheWinBackOffer(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "3100000000000001", status: .expired, expires: Self.lapsed)
        let fake = fixture.fake { answer.respond($0) }
        try await fake.run { port in
            let service = try fixture.service(port: port)
            try await fixture.application(service).test(.router) { client in
                let first = try await fixture.sign(client, "lapsed-1", transactionId: "31000000000000019")
                #expect(first.status == .ok, "\(first.text)")
                #expect(await fake.ledger.count("production", .statuses) == 1)
                #expect(await fake.ledger.count("production", .history) == 1)
                let stored = try #require(try await fixture.store.customerFacts(for: fixture.customer("lapsed-1")))
                let subscription = try #require(stored.subscription(inGroup: AppStoreFactsFixture.group))
                #expect(subscription.state == .expired)
                #expect(subscription.originalTransactionId == "3100000000000001")
                #expect(subscription.renewalCount == 1)
                // The store is now the source of truth: a legacy request for the same customer asks Apple nothing.
                let second = try await fixture.sign(client, "lapsed-1", transactionId: "31000000000000019", format: "legacy")
                #expect(second.status == .ok, "\(second.text)")
                #expect(await fake.ledger.total == 2)
            }
        }
        try await fixture.store.close()
    }

    @Test("an active subscriber the store did not know is refused the win-back offer on Apple's facts", arguments: StoreBackend.available)
    func activeSubscriberIsRefusedTheWinBackOffer(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "3200000000000001", status: .active, expires: Self.renewing)
        let fake = fixture.fake { answer.respond($0) }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                let response = try await fixture.sign(client, "active-1", transactionId: "3200000000000001")
                #expect(response.status == .forbidden)
                #expect(try response.decode(RefusalBody.self).error.reasons?.map(\.code) == ["not_lapsed"])
                #expect(
                    try await fixture.store.customerFacts(for: fixture.customer("active-1"))?.subscription(inGroup: AppStoreFactsFixture.group)?.state
                        == .active
                )
            }
        }
        try await fixture.store.close()
    }

    @Test(
        "introductory eligibility: an offer used in the group (Apple's history) says no; a transaction Apple does not know stays 404",
        arguments: StoreBackend.available
    )
    func introductoryOfferAlreadyUsed(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let used = try await fixture.answer(original: "3300000000000001", status: .expired, expires: Self.lapsed, introductory: true)
        let fresh = try await fixture.answer(original: "3300000000000002", status: .expired, expires: Self.lapsed)
        let fake = fixture.fake { request in
            switch request.transactionId {
            case "3300000000000001": used.respond(request)
            case "3300000000000002": fresh.respond(request)
            default: .error(.notFound, code: 4_040_010)
            }
        }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                func ask(_ username: String, _ transactionId: String) async throws -> TestResponse {
                    try await client.post(
                        "/v1/offers/introductory-eligibility",
                        json:
                            #"""
                            {"productIdentifier":"\#(TestPayloads.productIdentifier)","transactionId":"\#(transactionId)",\#
                            "applicationUsername":"\#(username)"}
                            """#
                    )
                }
                let usedAnswer = try await ask("intro-1", "3300000000000001")
                #expect(usedAnswer.status == .ok, "\(usedAnswer.text)")
                #expect(try usedAnswer.decode(IntroAnswer.self).allowIntroductoryOffer == false)
                #expect(
                    try await fixture.store.customerFacts(for: fixture.customer("intro-1"))?.subscription(inGroup: AppStoreFactsFixture.group)?
                        .hadIntroductoryOffer == true
                )
                let freshAnswer = try await ask("intro-2", "3300000000000002")
                #expect(try freshAnswer.decode(IntroAnswer.self).allowIntroductoryOffer == true)
                let unknown = try await ask("intro-3", "3300000000000009")
                #expect(unknown.status == .notFound)
                #expect(try unknown.decode(ErrorBody.self).error.code == "unknown_transaction")
            }
        }
        try await fixture.store.close()
    }

    @Test("Apple's 429 then 200: the request succeeds", arguments: StoreBackend.available)
    func rateLimitedThenAnswered(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "3400000000000001", status: .expired, expires: Self.lapsed)
        let counter = CallCounter()
        let fake = fixture.fake { request in
            if request.endpoint == .statuses, await counter.next() == 1 {
                return .error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", String(Int64(Date().timeIntervalSince1970 * 1000) + 200))])
            }
            return answer.respond(request)
        }
        try await fake.run { port in
            // A generous budget: this is about waiting out Retry-After, not about the timeout (on 2 busy cores the
            // default 2 s was once too short).
            try await fixture.application(try fixture.service(port: port, timeout: .seconds(10))).test(.router) { client in
                let response = try await fixture.sign(client, "limited-1", transactionId: "3400000000000001")
                #expect(response.status == .ok, "\(response.text)")
                #expect(await fake.ledger.count("production", .statuses) == 2)
            }
        }
        try await fixture.store.close()
    }

    @Test(
        "Apple hangs: refuse answers 503 app_store_unavailable with Retry-After within the timeout; allow-from-store decides on the store",
        arguments: StoreBackend.available
    )
    func hangingAppStore(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let fake = fixture.fake { _ in FakeResponse(hang: true) }
        let timeout = Duration.milliseconds(800)
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port, timeout: timeout)).test(.router) { client in
                let started = ContinuousClock.now
                let response = try await fixture.sign(client, "hang-1", transactionId: "3500000000000001")
                let elapsed = ContinuousClock.now - started
                #expect(response.status == .serviceUnavailable)
                #expect(try response.decode(ErrorBody.self).error.code == "app_store_unavailable")
                #expect(response.headers[.retryAfter] != nil)
                #expect(elapsed < timeout + .seconds(3), "answered after \(elapsed)")  // the fake never answers; loose: 2 busy cores
                #expect(try await fixture.store.customerFacts(for: fixture.customer("hang-1")) == nil)
            }
            try await fixture.application(try fixture.service(port: port, whenUnavailable: "allow-from-store", timeout: timeout)).test(.router) {
                client in
                let started = ContinuousClock.now
                let response = try await fixture.sign(client, "hang-2", transactionId: "3500000000000002")
                #expect(ContinuousClock.now - started < timeout + .seconds(3))
                // The store knows nothing of the customer: the policy's own no.
                #expect(response.status == .forbidden)
                #expect(try response.decode(RefusalBody.self).error.reasons?.map(\.code) == ["never_subscribed", "not_lapsed"])
            }
        }
        try await fixture.store.close()
    }

    @Test("20 concurrent requests for one transaction make one call to Apple", arguments: StoreBackend.available)
    func concurrentRequestsShareOneCall(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        var answer = try await fixture.answer(original: "3600000000000001", status: .expired, expires: Self.lapsed)
        answer.statuses.delay = .milliseconds(300)
        let slow = answer
        let fake = fixture.fake { slow.respond($0) }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<20 {
                        group.addTask { try await fixture.sign(client, "many-1", transactionId: "3600000000000001").status }
                    }
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
                #expect(statuses.count == 20)
                #expect(statuses.allSatisfy { $0 == .ok })
                #expect(await fake.ledger.count("production", .statuses) == 1)
                #expect(await fake.ledger.count("production", .history) == 1)
            }
        }
        try await fixture.store.close()
    }

    @Test("a forged answer (a chain the server does not trust) is refused and nothing is stored", arguments: StoreBackend.available)
    func forgedAnswerIsRefused(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let forger = TestJWSSigner(chain: try TestCertificateChain())
        let forged = try await fixture.answer(original: "3700000000000001", status: .expired, expires: Self.lapsed, signer: forger)
        let fake = fixture.fake { forged.respond($0) }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                let response = try await fixture.sign(client, "forged-1", transactionId: "3700000000000001")
                #expect(response.status == .serviceUnavailable)
                #expect(try response.decode(ErrorBody.self).error.code == "app_store_unavailable")
                #expect(try await fixture.store.customerFacts(for: fixture.customer("forged-1")) == nil)
                #expect(try await fixture.owners(of: "3700000000000001").isEmpty)
            }
        }
        try await fixture.store.close()
    }

    @Test(
        "Apple's answer is not attached to another customer: another appAccountToken, or a subscription already claimed",
        arguments: StoreBackend.available
    )
    func answerOfAnotherCustomerIsNotAttached(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let owner = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        let tokened = try await fixture.answer(original: "3800000000000001", token: owner, status: .expired, expires: Self.lapsed)
        let untokened = try await fixture.answer(original: "3800000000000002", status: .expired, expires: Self.lapsed)
        let fake = fixture.fake { request in
            request.transactionId.hasPrefix("3800000000000001") ? tokened.respond(request) : untokened.respond(request)
        }
        // The second subscription is already the claimant's in the store.
        _ = try await fixture.store.updateCustomer(fixture.customer("claimant")) { facts in
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: AppStoreFactsFixture.group,
                    productIdentifier: TestPayloads.productIdentifier,
                    originalTransactionId: "3800000000000002",
                    state: .expired,
                    expiresDate: Self.lapsed
                )
            ]
        }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                let mismatch = try await fixture.sign(client, "intruder", transactionId: "3800000000000001")
                #expect(mismatch.status == .forbidden)
                #expect(try mismatch.decode(ErrorBody.self).error.code == "customer_mismatch")
                #expect(try await fixture.store.customerFacts(for: fixture.customer("intruder")) == nil)
                #expect(try await fixture.owners(of: "3800000000000001").isEmpty)

                let claimed = try await fixture.sign(client, "intruder", transactionId: "3800000000000002")
                #expect(claimed.status == .conflict)
                #expect(try claimed.decode(ErrorBody.self).error.code == "transaction_claimed")
                #expect(try await fixture.owners(of: "3800000000000002") == [fixture.customer("claimant")])

                // The customer whose appAccountToken it carries gets it.
                let rightful = try await fixture.sign(client, owner.uppercased(), transactionId: "3800000000000001")
                #expect(rightful.status == .ok, "\(rightful.text)")
            }
        }
        try await fixture.store.close()
    }

    @Test("a retention request for an original transaction the store does not know fetches the facts", arguments: StoreBackend.available)
    func retentionForAnUnknownSubscriptionFetches(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "3900000000000001", status: .active, expires: Self.renewing)
        let fake = fixture.fake { answer.respond($0) }
        try await fake.run { port in
            // Past the deadline the product's fallback message is answered (RetentionTests.deadline checks that): the
            // fallback is what this test got when its 5 s deadline was not enough, beside 49 suites on two cores, for
            // the store's reads, the App Store's two answers (four signed items and their chains verified, in a debug
            // build) and the write. This test is about what the answer says, so the deadline and the client's budget
            // are generous, as RetentionFixture's. Apple's 700 ms is the production budget (docs/app-store-api.md).
            let service = try fixture.service(port: port, timeout: .seconds(30))
            let request = DecodedRealtimeRequestBody(
                originalTransactionId: "3900000000000001",
                appAppleId: FakeAppStore.appAppleId,
                productIdentifier: TestPayloads.productIdentifier,
                userLocale: "en-US",
                requestIdentifier: UUID().uuidString.lowercased(),
                environment: .production,
                signedDate: Date().appStoreMilliseconds
            )
            let response = try await RetentionAnswering(pipeline: service, deadline: .seconds(30)).answerRetention(
                request,
                bundleIdentifier: fixture.bundle
            )
            #expect(response.message?.messageIdentifier == "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e05")
            #expect(await fake.ledger.count("production", .statuses) == 1)
            #expect(try await fixture.owners(of: "3900000000000001") == [fixture.customer("otid:3900000000000001")])
        }
        try await fixture.store.close()
    }

    @Test("eligibility with a transactionId lists the offers on Apple's facts; without a client nothing is asked", arguments: StoreBackend.available)
    func eligibilityFetchesAndNoClientAsksNothing(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "4000000000000001", status: .expired, expires: Self.lapsed)
        let fake = fixture.fake { answer.respond($0) }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: nil)).test(.router) { client in
                let response = try await fixture.sign(client, "plain-1", transactionId: "4000000000000001")
                #expect(response.status == .forbidden)
                #expect(await fake.ledger.total == 0)
            }
            try await fixture.application(try fixture.service(port: port)).test(.router) { client in
                let answer = try await client.post(
                    "/v1/offers/eligibility",
                    json: #"{"applicationUsername":"plain-1","transactionId":"4000000000000001"}"#
                ).decode(EligibilityAnswer.self)
                #expect(answer.offers.map(\.eligible) == [true])
                #expect(await fake.ledger.count("production", .statuses) == 1)
            }
        }
        try await fixture.store.close()
    }

    @Test(
        "POST /admin/customers/{bundle}/{customer}/refresh asks Apple for the customer's known subscription, stores and audits",
        arguments: StoreBackend.available
    )
    func adminRefresh(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let answer = try await fixture.answer(original: "4100000000000001", status: .active, expires: Self.renewing)
        let fake = fixture.fake { answer.respond($0) }
        _ = try await fixture.store.updateCustomer(fixture.customer("known-1")) { facts in
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: AppStoreFactsFixture.group,
                    productIdentifier: TestPayloads.productIdentifier,
                    originalTransactionId: "4100000000000001",
                    state: .expired,
                    expiresDate: Self.lapsed
                )
            ]
        }
        try await fake.run { port in
            try await fixture.application(try fixture.service(port: port, cacheTimeToLive: .zero)).test(.router) { client in
                let auth: HTTPFields = [.authorization: "Bearer \(AppStoreFactsFixture.adminToken)"]
                let response = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/known-1/refresh", method: .post, headers: auth)
                #expect(response.status == .ok, "\(response.text)")
                #expect(response.text.contains("\"active\""))
                #expect(
                    try await fixture.store.customerFacts(for: fixture.customer("known-1"))?.subscription(inGroup: AppStoreFactsFixture.group)?.state
                        == .active
                )
                #expect(
                    try await fixture.store.auditEvents(limit: 10_000, since: nil).contains {
                        $0.action == "customer.refresh" && $0.actor == "carol" && $0.target.hasPrefix(fixture.bundle)
                    }
                )
                let unknown = try await client.execute(uri: "/admin/customers/\(fixture.bundle)/nobody/refresh", method: .post, headers: auth)
                #expect(unknown.status == .notFound)
            }
        }
        try await fixture.store.close()
    }
}

/// The `appStoreUnavailable` policy key and the App Store Server API variables.
@Suite struct AppStoreConfigurationTests {
    @Test func thePolicyRefusesByDefault() throws {
        let text = "apps:\n  - bundleIdentifier: a\n"
        #expect(try OfferPolicy(text: text).appStoreUnavailable == .refuse)
        #expect(try OfferPolicy(text: "appStoreUnavailable: allow-from-store\n" + text).appStoreUnavailable == .allowFromStore)
    }

    private func environment(_ extra: [String: String]) throws -> [String: String] {
        [
            "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_BUNDLE_ID": "com.example.app",
            "OFFER_SIGNER_KEY_ABC123DEFG": try SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation,
        ].merging(extra) { $1 }
    }

    @Test func noKeyIdMeansNoClient() throws {
        #expect(try ServiceConfiguration(environment: environment([:])).appStoreAPI == nil)
    }

    @Test func theKeyIdAloneTakesTheSigningKeyOfThatId() throws {
        let configuration = try ServiceConfiguration(
            environment: environment([
                "OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_ISSUER_ID": FakeAppStore.issuerId,
                "OFFER_SIGNER_APP_STORE_API_TIMEOUT": "1500ms", "OFFER_SIGNER_APP_STORE_API_CACHE_TTL": "30s",
                "OFFER_SIGNER_APP_STORE_API_URL": "http://127.0.0.1:9/appstore", "OFFER_SIGNER_ENVIRONMENTS": "Sandbox,Production",
            ])
        )
        let settings = try #require(configuration.appStoreAPI)
        #expect(settings.timeout == .milliseconds(1500))
        #expect(settings.cacheTimeToLive == .seconds(30))
        let client = try settings.clientConfiguration(for: configuration.apps[0], environments: configuration.environments)
        #expect(client.environments == [.production, .sandbox])
        #expect(client.baseURLs.production == "http://127.0.0.1:9/appstore")
        #expect(!settings.description.contains("PRIVATE"))
    }

    @Test(arguments: [
        (["OFFER_SIGNER_APP_STORE_API_KEY_ID": "NOSUCHKEY1", "OFFER_SIGNER_ISSUER_ID": "i"], "OFFER_SIGNER_APP_STORE_API_KEY_ID"),
        (["OFFER_SIGNER_APP_STORE_API_KEY_FILE": "/nonexistent.p8"], "OFFER_SIGNER_APP_STORE_API_KEY_FILE"),
        (
            [
                "OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_APP_STORE_API_KEY_FILE": "/nonexistent.p8",
                "OFFER_SIGNER_ISSUER_ID": "i",
            ], "OFFER_SIGNER_APP_STORE_API_KEY_FILE"
        ),
        (["OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG"], "OFFER_SIGNER_ISSUER_ID"),
        (
            ["OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_ISSUER_ID": "i", "OFFER_SIGNER_APP_STORE_API_TIMEOUT": "forever"],
            "OFFER_SIGNER_APP_STORE_API_TIMEOUT"
        ),
        (
            ["OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_ISSUER_ID": "i", "OFFER_SIGNER_APP_STORE_API_CACHE_TTL": "-1s"],
            "OFFER_SIGNER_APP_STORE_API_CACHE_TTL"
        ),
        (
            ["OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_ISSUER_ID": "i", "OFFER_SIGNER_APP_STORE_API_URL": "ftp:/x"],
            "OFFER_SIGNER_APP_STORE_API_URL"
        ),
        (
            ["OFFER_SIGNER_APP_STORE_API_KEY_ID": "ABC123DEFG", "OFFER_SIGNER_ISSUER_ID": "i", "OFFER_SIGNER_ENVIRONMENTS": "Xcode"],
            "OFFER_SIGNER_ENVIRONMENTS"
        ),
    ])
    func aBadValueNamesItsVariable(_ extra: [String: String], variable: String) throws {
        let environment = try environment(extra)
        do throws(ConfigurationError) {
            _ = try ServiceConfiguration(environment: environment)
            Issue.record("accepted \(extra)")
        } catch {
            #expect(error.message.contains(variable), "\(error.message)")
            #expect(!error.message.contains("PRIVATE KEY"))
        }
    }
}

struct IntroAnswer: Decodable {
    var allowIntroductoryOffer: Bool
}
