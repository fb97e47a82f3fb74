import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// Retention Messaging from an empty catalogue at Apple (the stand-in) to live in Production, through the use case
/// the commands run (``RetentionMessagingSetup``) and through `/admin/retention/*`, on each store: sync uploads,
/// approval, defaults, a second sync that sends nothing, the performance test, Production.
@Suite struct RetentionSetupTests {
    static let url = "https://offers.example.com/v1/retention/appstore"
    static let adminToken = "carol-token-0123456789abcdef"

    @Test(arguments: StoreBackend.available)
    func theCommandsTakeAnEmptyCatalogueLiveAndASecondSyncSendsNothing(_ backend: StoreBackend) async throws {
        let fixture = try await Fixture(backend)
        try await fixture.fake.run { port in
            let setup = try fixture.setup(port: port)
            let sync = try setup.catalogue(fixture.bundle, environment: .production)
            let app = try #require(fixture.policy.app(fixture.bundle))

            let first = try await sync.sync(app)
            #expect(first.uploaded.count == 5)  // 3 images, 2 messages
            #expect(first.defaultsWaiting == ["com.example.monthly en-US"] && first.defaultsSet.isEmpty)
            #expect(first.items.allSatisfy { $0.state == "PENDING" })
            #expect(try await fixture.recordedStates() == Set(["PENDING"]))

            try await fixture.approveEverything(app)
            let status = try await sync.status(app)
            #expect(status.items.count == 5 && status.items.allSatisfy { $0.state == "APPROVED" && $0.inPolicy })
            #expect(try await fixture.recordedStates() == Set(["APPROVED"]))

            let second = try await sync.sync(app)
            #expect(second.uploaded.isEmpty && second.defaultsSet == ["com.example.monthly en-US"])
            let message = try #require(app.retentionCatalogue.message(named: "keep-going"))
            #expect(await fixture.fake.state.defaultMessage(productId: "com.example.monthly", locale: "en-US") == message.identifier)

            let uploads = await fixture.uploadCalls()
            let third = try await sync.sync(app)
            #expect(third.uploaded.isEmpty && third.defaultsSet.isEmpty && third.deleted.isEmpty)
            #expect(await fixture.uploadCalls() == uploads)

            await fixture.fake.state.scriptPerformanceTests([.pass])
            let outcome = try await setup.goLive(
                fixture.bundle,
                productionURL: Self.url,
                sandboxURL: nil,
                originalTransactionId: "2000000123456789",
                pollInterval: .milliseconds(10),
                report: { _ in }
            )
            guard case .live = outcome else {
                Issue.record("expected live, got \(outcome)")
                return
            }
            #expect(await fixture.fake.state.realtimeURL(in: "production") == Self.url)
            let last = try #require(await setup.lastPerformanceTest(fixture.bundle))
            #expect(last.live && last.result.result == .pass)
        }
        try await fixture.store.close()
    }

    @Test(arguments: StoreBackend.available)
    func theAdminRoutesTakeAnEmptyCatalogueLive(_ backend: StoreBackend) async throws {
        let fixture = try await Fixture(backend)
        try await fixture.fake.run { port in
            let setup = try fixture.setup(port: port)
            let service = SigningPipeline(
                apps: [],
                keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
                policy: fixture.policy,
                store: fixture.store
            )
            let router = buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: nil, retentionMessaging: setup),
                adminTokens: try BearerTokens(parsing: "carol:\(Self.adminToken),alice:\(ConsoleTests.token)")
            )
            let app = Application(router: router, logger: Logger(label: "test"))
            try await app.test(.router) { client in
                let headers: HTTPFields = [.authorization: "Bearer \(Self.adminToken)", .contentType: "application/json"]
                func report(_ method: HTTPRequest.Method, _ uri: String) async throws -> RetentionCatalogueSync.Report {
                    let response = try await client.execute(uri: uri, method: method, headers: headers)
                    #expect(response.status == .ok, "\(uri): \(String(buffer: response.body))")
                    return try JSONDecoder().decode(RetentionCatalogueSync.Report.self, from: Data(response.body.readableBytesView))
                }
                let first = try await report(.post, "/admin/retention/sync")
                #expect(first.uploaded.count == 5 && first.defaultsWaiting.count == 1)
                try await fixture.approveEverything(try #require(fixture.policy.app(fixture.bundle)))
                #expect(try await report(.get, "/admin/retention/status?environment=Production").items.allSatisfy { $0.state == "APPROVED" })
                #expect(try await report(.post, "/admin/retention/sync").defaultsSet.count == 1)
                let uploads = await fixture.uploadCalls()
                let again = try await report(.post, "/admin/retention/sync")
                #expect(again.uploaded.isEmpty && again.defaultsSet.isEmpty)
                #expect(await fixture.uploadCalls() == uploads)

                // Production refuses the URL before a Sandbox test passed; a failed test leaves it alone.
                await fixture.fake.state.scriptPerformanceTests([.fail, .pass])
                let body = #"{"url":"\#(Self.url)","originalTransactionId":"2000000123456789","pollSeconds":1}"#
                let failed = try await client.execute(
                    uri: "/admin/retention/go-live",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: body)
                )
                #expect(failed.status == .ok)
                #expect(String(buffer: failed.body).contains(#""outcome":"failed""#))
                #expect(await fixture.fake.state.realtimeURL(in: "production") == nil)
                let passed = try await client.execute(
                    uri: "/admin/retention/go-live",
                    method: .post,
                    headers: headers,
                    body: ByteBuffer(string: body)
                )
                #expect(String(buffer: passed.body).contains(#""outcome":"live""#))
                #expect(await fixture.fake.state.realtimeURL(in: "production") == Self.url)

                let unknown = try await client.execute(uri: "/admin/retention/status?environment=Elsewhere", method: .get, headers: headers)
                #expect(unknown.status == .badRequest)

                // The console shows the catalogue with the states recorded and the last test.
                let session = try await ConsoleTests.signIn(client)
                let page = try await ConsoleTests.get(client, "/console/retention", session)
                #expect(page.status == .ok)
                let text = String(buffer: page.body)
                #expect(text.contains("keep-going") && text.contains("hero.png"))
                #expect(text.contains(">APPROVED<") && !text.contains(">PENDING<"))
                #expect(text.contains("live in Production") && text.contains("Result: PASS"))
            }
        }
        try await fixture.store.close()
    }

    @Test func anAnswerNeverNamesAMessageAppleHasNotApproved() async throws {
        let fixture = try await Fixture(.sqlite)
        try await fixture.fake.run { port in
            let setup = try fixture.setup(port: port)
            let app = try #require(fixture.policy.app(fixture.bundle))
            let sync = try setup.catalogue(fixture.bundle, environment: .production)
            _ = try await sync.sync(app)
            let keys = try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")])
            let request = DecodedRealtimeRequestBody(
                originalTransactionId: "2000000123456789",
                appAppleId: FakeAppStore.appAppleId,
                productIdentifier: "com.example.monthly",
                userLocale: "en-US",
                requestIdentifier: UUID().uuidString.lowercased(),
                environment: .production,
                signedDate: Date().appStoreMilliseconds
            )
            // Uploaded, PENDING: no entry may answer, so the App Store shows its default message.
            let pending = RetentionAnswering(
                pipeline: SigningPipeline(apps: [], keyRing: keys, policy: fixture.policy, store: fixture.store),
                deadline: .seconds(10)
            )
            await #expect(throws: OfferServiceError.self) { _ = try await pending.answerRetention(request, bundleIdentifier: fixture.bundle) }

            try await fixture.approveEverything(app)
            _ = try await sync.status(app)
            let approved = RetentionAnswering(
                pipeline: SigningPipeline(apps: [], keyRing: keys, policy: fixture.policy, store: fixture.store),
                deadline: .seconds(10)
            )
            var again = request
            again.requestIdentifier = UUID().uuidString.lowercased()
            let answer = try await approved.answerRetention(again, bundleIdentifier: fixture.bundle)
            #expect(answer.message?.messageIdentifier == app.retentionCatalogue.message(named: "keep-going")?.identifier)
        }
        try await fixture.store.close()
    }

    @Test func aCatalogueBreakingALimitSendsNothing() async throws {
        let fixture = try await Fixture(.sqlite, header: String(repeating: "h", count: 67))
        try await fixture.fake.run { port in
            let sync = try fixture.setup(port: port).catalogue(fixture.bundle, environment: .production)
            await #expect(throws: RetentionMessagingError.self) { _ = try await sync.sync(try #require(fixture.policy.app(fixture.bundle))) }
            #expect(await fixture.fake.state.count("GET image/list") == 0)
            #expect(await fixture.uploadCalls() == 0)
        }
        try await fixture.store.close()
    }

    /// A store, a policy with a catalogue (a message with an image and two bullet points, a text message for an
    /// offer, a default) in a folder, and the stand-in of Apple's API.
    struct Fixture {
        let store: any OfferStore
        let policy: OfferPolicy
        /// An app of this test only: the stores' databases are shared by tests running at once.
        let bundle = "com.example.retention-\(UUID().uuidString.prefix(8).lowercased())"
        let appKey = P256.Signing.PrivateKey()
        let fake: FakeRetentionMessaging

        init(_ backend: StoreBackend, header: String = "Before you go") async throws {
            store = try await backend.open()
            fake = FakeRetentionMessaging(appKey: appKey, bundleIdentifier: bundle)
            let folder = try CatalogueFolder()
            try folder.write("hero.png", RetentionPNG.make(width: 3840, height: 1200))
            try folder.write("star.png", RetentionPNG.make(width: 1024, height: 1024))
            try folder.write("clock.png", RetentionPNG.make(width: 1024, height: 1024, text: "clock"))
            let file = folder.url.appendingPathComponent("policy.yaml")
            try Data(
                """
                apps:
                  - bundleIdentifier: \(bundle)
                    appAppleId: \(FakeAppStore.appAppleId)
                    retentionMessages:
                      - name: keep-going
                        locale: en-US
                        header: \(header)
                        body: Your plan keeps everything you made.
                        headerPosition: ABOVE_IMAGE
                        image: hero.png
                        altText: A chart of the month's progress
                        bulletPoints:
                          - { text: Every lesson stays, image: star.png, altText: a star }
                          - { text: Pick up where you left off, image: clock.png, altText: a clock }
                      - name: half-price
                        header: Half price
                        body: Stay for half price for three months.
                    products:
                      - productIdentifier: com.example.monthly
                        offers:
                          - offerIdentifier: half_price
                        retentionDefaults: { en-US: keep-going }
                        retention:
                          - promotionalOffer: half_price
                            message: half-price
                            rules: [auto-renew-off]
                          - message: keep-going
                """.utf8
            ).write(to: file)
            policy = try OfferPolicy(contentsOf: file.path)
        }

        /// The use case on the stand-in on `port`, without client-side rate limits.
        func setup(port: Int) throws -> RetentionMessagingSetup {
            var configuration = AppStoreServerAPIConfiguration(
                keyIdentifier: FakeAppStore.keyIdentifier,
                privateKeyPEM: appKey.pemRepresentation,
                issuerId: FakeAppStore.issuerId,
                bundleIdentifier: bundle
            )
            configuration.baseURLs = .init(production: "http://localhost:\(port)/production", sandbox: "http://localhost:\(port)/sandbox")
            return try RetentionMessagingSetup(
                configurations: [bundle: configuration],
                options: .init(timeout: .seconds(30), rateLimit: .off),
                store: store,
                logger: Logger(label: "test")
            )
        }

        /// Apple's review: every item of the catalogue approved in Production.
        func approveEverything(_ app: OfferPolicy.App) async throws {
            for image in app.retentionCatalogue.images { await fake.state.approveImage(image.identifier) }
            for message in app.retentionCatalogue.messages { await fake.state.approveMessage(message.identifier) }
        }

        /// Upload and default requests the stand-in received in Production.
        func uploadCalls() async -> Int {
            await fake.state.count("PUT image") + fake.state.count("PUT message") + fake.state.count("PUT default")
        }

        /// The states the store recorded for Production.
        func recordedStates() async throws -> Set<String> {
            Set(try await store.retentionCatalogue(bundleIdentifier: bundle, environment: "Production").map(\.state))
        }
    }
}
