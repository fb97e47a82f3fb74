import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferEligibility
import OfferModel
import OfferStore

/// Setting Retention Messaging up at Apple, the one use case behind `offer-signer retention sync|status|go-live` and
/// `/admin/retention/*`: the catalogue made to match the policy (``RetentionCatalogueSync``), its approval states,
/// and going live (``RetentionGoLive``: the Sandbox URL, Apple's performance test, Production on PASS only), with
/// the last performance test's result kept in the store for the console.
///
/// One pair of clients (Sandbox, Production) per app, made once: their rate limiters are shared by every call, so
/// Apple's limits hold across calls of one process.
public struct RetentionMessagingSetup: Sendable {
    struct Clients: Sendable {
        var sandbox: RetentionMessagingClient
        var production: RetentionMessagingClient
    }

    let clients: [String: Clients]
    let store: (any SharedDocuments & RetentionCatalogueStore)?
    let logger: Logger

    /// - Parameters:
    ///   - configurations: The App Store Server API's configuration of each app, by bundle ID.
    ///   - options: The clients' budgets and rates (Apple's by default).
    ///   - store: Where states and the last performance test are recorded.
    ///   - logger: Where uploads, defaults and test results are logged (identifiers only).
    /// - Throws: ``RetentionMessagingError/Code/invalidConfiguration``.
    public init(
        configurations: [String: AppStoreServerAPIConfiguration],
        options: RetentionMessagingClient.Options = .init(),
        store: (any SharedDocuments & RetentionCatalogueStore)?,
        logger: Logger
    ) throws(RetentionMessagingError) {
        var clients: [String: Clients] = [:]
        for (bundle, configuration) in configurations {
            clients[bundle] = Clients(
                sandbox: try RetentionMessagingClient(configuration: configuration, environment: .sandbox, options: options, logger: logger),
                production: try RetentionMessagingClient(configuration: configuration, environment: .production, options: options, logger: logger)
            )
        }
        self.clients = clients
        self.store = store
        self.logger = logger
    }

    /// The apps this setup can configure.
    public var bundleIdentifiers: [String] { clients.keys.sorted() }

    /// The catalogue sync of `app` in one environment.
    /// - Throws: ``RetentionMessagingError/Code/invalidConfiguration`` for an app the API is not configured for.
    public func catalogue(_ bundleIdentifier: String, environment: AppStoreEnvironment) throws(RetentionMessagingError) -> RetentionCatalogueSync {
        let pair = try clients(bundleIdentifier)
        return RetentionCatalogueSync(client: environment == .sandbox ? pair.sandbox : pair.production, store: store, logger: logger)
    }

    /// Runs ``RetentionGoLive`` for an app and keeps the test's result (``lastPerformanceTest(_:)``).
    public func goLive(
        _ bundleIdentifier: String,
        productionURL: String,
        sandboxURL: String?,
        originalTransactionId: String,
        resumeRequestId: String? = nil,
        pollInterval: Duration = .seconds(15),
        timeout: Duration = .seconds(3600),
        report: @escaping @Sendable (String) -> Void
    ) async throws(RetentionMessagingError) -> RetentionGoLive.Outcome {
        let pair = try clients(bundleIdentifier)
        let outcome = try await RetentionGoLive(sandbox: pair.sandbox, production: pair.production).run(
            productionURL: productionURL,
            sandboxURL: sandboxURL,
            originalTransactionId: originalTransactionId,
            resumeRequestId: resumeRequestId,
            pollInterval: pollInterval,
            timeout: timeout,
            report: report
        )
        let result: RetentionPerformanceTestResult
        let live: Bool
        switch outcome {
        case .live(let passed): (result, live) = (passed, true)
        case .failed(let failed), .inconclusive(let failed): (result, live) = (failed, false)
        }
        logger.notice(
            "retention performance test ended",
            metadata: [
                "bundleIdentifier": "\(bundleIdentifier)", "result": "\(result.result?.rawValue ?? "none")", "live": "\(live)",
            ]
        )
        await record(
            PerformanceTestRecord(result: result, live: live, productionURL: live ? productionURL : nil, endedAt: Date()),
            for: bundleIdentifier
        )
        return outcome
    }

    /// The last performance test run through this use case for an app, `nil` when none was.
    public func lastPerformanceTest(_ bundleIdentifier: String) async -> PerformanceTestRecord? {
        await Self.lastPerformanceTest(bundleIdentifier, store: store)
    }

    /// The last performance test recorded in `store` for an app (the console reads it without a client).
    public static func lastPerformanceTest(_ bundleIdentifier: String, store: (any SharedDocuments)?) async -> PerformanceTestRecord? {
        guard let store, let document = try? await store.document(named: documentName(bundleIdentifier)) else { return nil }
        return try? JSONDecoder().decode(PerformanceTestRecord.self, from: Data(document.text.utf8))
    }

    /// A performance test's result as kept in the store.
    public struct PerformanceTestRecord: Codable, Sendable, Hashable {
        public var result: RetentionPerformanceTestResult
        /// Whether Production's URL was configured after it.
        public var live: Bool
        public var productionURL: String?
        public var endedAt: Date
    }

    private func clients(_ bundleIdentifier: String) throws(RetentionMessagingError) -> Clients {
        guard let pair = clients[bundleIdentifier] else {
            throw RetentionMessagingError(
                .invalidConfiguration,
                "the App Store Server API is not configured for \(bundleIdentifier.prefix(100)) (docs/app-store-api.md): it cannot be set up at Apple"
            )
        }
        return pair
    }

    static func documentName(_ bundleIdentifier: String) -> String { "retention-performance-test:\(bundleIdentifier)" }

    private func record(_ record: PerformanceTestRecord, for bundleIdentifier: String) async {
        guard let store else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            let text = String(decoding: try encoder.encode(record), as: UTF8.self)
            for _ in 0..<3 {  // compare-and-set: another replica may record one at the same time
                let version = try await store.document(named: Self.documentName(bundleIdentifier))?.version ?? 0
                if try await store.replaceDocument(named: Self.documentName(bundleIdentifier), version: version + 1, text: text) { return }
            }
        } catch {
            logger.warning("the performance test's result could not be recorded", metadata: ["error": "\(type(of: error))"])
        }
    }
}
