import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import Crypto
import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferStore
import Synchronization
import Testing

/// ``RetentionAdministration`` over in-memory fakes of its store capabilities and the stand-in of Apple's Retention
/// Messaging API: which app and environment a call works on, the go-live's bounds, the audit of a sync and a
/// go-live (none for a tool's run), and what the console reads of the store.
@Suite struct RetentionAdministrationTests {
    let catalogues = RetentionCatalogueMemoryStore()
    let documents = SharedDocumentsMemoryStore()
    let audit = AuditMemoryLog()
    let logger = Logger(label: "test")
    let bundle = "com.example.retention-admin"
    static let url = "https://offers.example.com/v1/retention/appstore"

    /// A policy of the given apps, without a retention catalogue.
    static func policy(_ bundles: [String]) throws -> OfferPolicy {
        let apps = bundles.map { bundle in
            """
              - bundleIdentifier: \(bundle)
                appAppleId: \(FakeAppStore.appAppleId)
                products:
                  - productIdentifier: com.example.monthly
                    offers:
                      - offerIdentifier: half_price
            """
        }
        return try OfferPolicy(text: "apps:\n" + apps.joined(separator: "\n"))
    }

    func administration(policy: OfferPolicy?, setup: RetentionMessagingSetup? = nil) -> RetentionAdministration {
        RetentionAdministration(
            setup: setup,
            catalogues: catalogues,
            documents: documents,
            audit: AuditTrail(log: audit),
            policies: PolicyHolder(PolicyInForce(policy: policy))
        )
    }

    /// The set-up on the stand-in on `port`, recording in the fakes, without client-side rate limits.
    func setup(port: Int, appKey: P256.Signing.PrivateKey) throws -> RetentionMessagingSetup {
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
            store: RetentionSetupStore(catalogues: catalogues, documents: documents),
            logger: logger
        )
    }

    @Test func withoutAPolicyThereIsNothingToSetUp() throws {
        #expect(throws: OfferServiceError(.noPolicy, "The service has no policy: there is no retention catalogue to set up.")) {
            try administration(policy: nil).target(bundleIdentifier: nil, environment: nil)
        }
    }

    @Test func theTargetIsThePolicysOnlyAppInProductionUnlessNamed() throws {
        let retention = administration(policy: try Self.policy([bundle]))
        let target = try retention.target(bundleIdentifier: nil, environment: nil)
        #expect(target.app.bundleIdentifier == bundle && target.environment == .production)
        #expect(try retention.target(bundleIdentifier: bundle, environment: "SANDBOX").environment == .sandbox)
        #expect(try retention.target(bundleIdentifier: nil, environment: "Production").environment == .production)
    }

    @Test func anEnvironmentOrAppOutsideThePolicyIsRefusedNamingTheField() throws {
        let several = administration(policy: try Self.policy([bundle, "com.example.other"]))
        do {
            _ = try several.target(bundleIdentifier: nil, environment: nil)
            Issue.record("several apps and none named should be refused")
        } catch {
            #expect(error.code == .invalidRequest && error.field == "bundleId")
        }
        #expect(try several.target(bundleIdentifier: "com.example.other", environment: nil).app.bundleIdentifier == "com.example.other")
        do {
            _ = try several.target(bundleIdentifier: bundle, environment: "staging")
            Issue.record("an unknown environment should be refused")
        } catch {
            #expect(error.code == .invalidRequest && error.field == "environment")
        }
    }

    @Test(arguments: [(0, nil), (601, nil), (nil, 0), (nil, 1_441)] as [(Int?, Int?)])
    func aGoLiveOutsideItsBoundsIsRefusedBeforeAppleIsAsked(_ poll: Int?, _ minutes: Int?) async throws {
        // No set-up: anything that reached Apple would be refused as not configured instead.
        do {
            _ = try await administration(policy: try Self.policy([bundle])).goLive(
                bundle,
                productionURL: Self.url,
                sandboxURL: nil,
                originalTransactionId: "2000000123456789",
                resumeRequestId: nil,
                pollSeconds: poll,
                timeoutMinutes: minutes,
                by: "carol",
                logger: logger
            )
            Issue.record("the bounds should be checked")
        } catch let error as OfferServiceError {
            #expect(error.code == .invalidRequest && error.field == (poll == nil ? "timeoutMinutes" : "pollSeconds"))
        }
        #expect(audit.appended.isEmpty)
    }

    @Test func withoutTheAppStoreServerAPINothingIsSetUpOrAudited() async throws {
        let retention = administration(policy: try Self.policy([bundle]))
        #expect(!retention.canSetUp)
        let target = try retention.target(bundleIdentifier: nil, environment: nil)
        await #expect(throws: RetentionMessagingError.self) {
            try await retention.sync(target, deleteDropped: false, by: "carol", logger: logger)
        }
        #expect(audit.appended.isEmpty)
    }

    @Test func theRecordedStatesAreReadByEnvironmentWithoutAskingApple() async throws {
        let checked = Date(timeIntervalSince1970: 1_800_000_000)
        try await catalogues.replaceRetentionCatalogue(
            bundleIdentifier: bundle,
            environment: "Production",
            with: [RetentionCatalogueRecord(kind: "message", identifier: "m-1", name: "keep", state: "PENDING", sentAt: nil, checkedAt: checked)]
        )
        try await catalogues.replaceRetentionCatalogue(
            bundleIdentifier: bundle,
            environment: "Sandbox",
            with: [RetentionCatalogueRecord(kind: "message", identifier: "m-1", name: "keep", state: "APPROVED", sentAt: nil, checkedAt: checked)]
        )
        let retention = administration(policy: try Self.policy([bundle]))
        #expect(try await retention.recordedStates(of: bundle) == ["Production": ["m-1": "PENDING"], "Sandbox": ["m-1": "APPROVED"]])
        #expect(try await retention.recordedStates(of: "com.example.other") == ["Production": [:], "Sandbox": [:]])
        #expect(await retention.lastPerformanceTest(bundle) == nil)
        catalogues.failing(true)
        await #expect(throws: OfferServiceError.storeUnavailable) { try await retention.recordedStates(of: bundle) }
    }

    @Test func aSyncAndAGoLiveAreAuditedWithTheAdminAndATestIsRecorded() async throws {
        let appKey = P256.Signing.PrivateKey()
        let fake = FakeRetentionMessaging(appKey: appKey, bundleIdentifier: bundle)
        let policy = try Self.policy([bundle])
        try await fake.run { port in
            let retention = administration(policy: policy, setup: try setup(port: port, appKey: appKey))
            #expect(retention.canSetUp)
            let target = try retention.target(bundleIdentifier: nil, environment: "sandbox")
            let report = try await retention.sync(target, deleteDropped: false, by: "carol", logger: logger)
            #expect(report.environment == "Sandbox")
            _ = try await retention.status(target)
            var events = audit.appended
            #expect(events.count == 1, "a status changes nothing at Apple and is not audited")
            #expect(events.first?.action == "retention.sync" && events.first?.actor == "carol" && events.first?.target == bundle)
            #expect(events.first?.details == ["environment": "Sandbox", "uploaded": "0", "deleted": "0", "defaultsSet": "0"])

            await fake.state.scriptPerformanceTests([.pass])
            let lines = LinesSeen()
            let live = try await retention.goLive(
                bundle,
                productionURL: Self.url,
                sandboxURL: nil,
                originalTransactionId: "2000000123456789",
                resumeRequestId: nil,
                pollSeconds: 1,
                by: "carol",
                logger: logger,
                report: { lines.add($0) }
            )
            #expect(live.outcome == "live" && live.result.result == .pass)
            #expect(!live.lines.isEmpty && live.lines == lines.all)
            events = audit.appended
            #expect(events.count == 2 && events.last?.action == "retention.go-live" && events.last?.details == ["outcome": "live"])
            let recorded = try #require(await retention.lastPerformanceTest(bundle))
            #expect(recorded.live && recorded.productionURL == Self.url)

            // A tool's run (no admin) changes Apple's side as well, and is not audited.
            _ = try await retention.sync(target, deleteDropped: false, by: nil, logger: logger)
            #expect(audit.appended.count == 2)
        }
    }
}

/// The two capabilities ``RetentionMessagingSetup`` records in, from their fakes.
struct RetentionSetupStore: SharedDocuments, RetentionCatalogueStore {
    let catalogues: RetentionCatalogueMemoryStore
    let documents: SharedDocumentsMemoryStore

    func document(named name: String) async throws -> StoredDocument? { try await documents.document(named: name) }

    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool {
        try await documents.replaceDocument(named: name, version: version, text: text)
    }

    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws {
        try await catalogues.replaceRetentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment, with: records)
    }

    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord] {
        try await catalogues.retentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment)
    }
}

/// The lines a go-live reported, in order.
final class LinesSeen: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
