import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferEligibility
import OfferModel
import OfferStore
import Synchronization

/// What admins do to Retention Messaging (`/admin/retention/*`, the console's retention page, `offer-signer retention
/// sync|status|go-live`): the catalogue made to match the policy in force and its approval states, going live
/// (Apple's performance test), and what the store recorded of both. Set-ups at Apple go through
/// ``RetentionMessagingSetup``; what an admin changes is audited with their name (`retention.sync`,
/// `retention.go-live`), and an audit row that cannot be written is logged, the change standing.
public struct RetentionAdministration: Sendable {
    /// An app of the policy and the environment a catalogue call works on.
    public struct Target: Sendable {
        public var app: OfferPolicy.App
        public var environment: AppStoreEnvironment
    }

    /// A go-live's answer: the outcome, the test's result and what was reported on the way.
    public struct GoLiveReport: Sendable, Codable {
        /// `live`, `failed` or `inconclusive`.
        public var outcome: String
        public var result: RetentionPerformanceTestResult
        public var lines: [String]
    }

    /// How often a go-live polls Apple's test result by default, in seconds.
    public static let defaultPollSeconds = 15
    /// The seconds between polls a go-live accepts (Sandbox allows a poll every 10 s).
    public static let pollSeconds = 1...600
    /// How long a go-live polls by default, in minutes.
    public static let defaultTimeoutMinutes = 10
    /// The minutes a go-live may poll: a day at most (the admin API, whose answer waits for the end, allows an hour).
    public static let timeoutMinutes = 1...1_440

    let setup: RetentionMessagingSetup?
    let catalogues: (any RetentionCatalogueStore)?
    let documents: (any SharedDocuments)?
    let audit: AuditTrail?
    let policies: PolicyHolder

    /// - Parameters:
    ///   - setup: the clients that set Retention Messaging up at Apple; `nil` when the App Store Server API is not
    ///     configured (then only what the store recorded can be read).
    ///   - catalogues: where the catalogue's approval states are recorded; `nil` without a store.
    ///   - documents: where the last performance test is recorded; `nil` without a store.
    ///   - audit: where admins' changes are audited; `nil`: not audited.
    ///   - policies: the policy in force, whose catalogue is set up.
    public init(
        setup: RetentionMessagingSetup?,
        catalogues: (any RetentionCatalogueStore)?,
        documents: (any SharedDocuments)?,
        audit: AuditTrail?,
        policies: PolicyHolder
    ) {
        self.setup = setup
        self.catalogues = catalogues
        self.documents = documents
        self.audit = audit
        self.policies = policies
    }

    /// Whether Retention Messaging can be set up at Apple (the App Store Server API is configured).
    public var canSetUp: Bool { setup != nil }

    /// The app (`bundleIdentifier`, default the policy's only app) and environment (`environment`, `Production` or
    /// `Sandbox` in any case, default Production) a catalogue call works on.
    /// - Throws: ``OfferServiceError`` `no_policy` without a policy; `invalid_request` (fields `bundleId`,
    ///   `environment`).
    public func target(bundleIdentifier: String?, environment: String?) throws(OfferServiceError) -> Target {
        guard let policy = policies.policy else {
            throw OfferServiceError(.noPolicy, "The service has no policy: there is no retention catalogue to set up.")
        }
        let bundle = bundleIdentifier ?? (policy.apps.count == 1 ? policy.apps[0].bundleIdentifier : "")
        guard let app = policy.app(bundle) else {
            throw OfferServiceError.invalidRequest(field: "bundleId", "bundleId must name an app of the policy (required when it has several).")
        }
        switch environment?.lowercased() ?? "production" {
        case "production": return Target(app: app, environment: .production)
        case "sandbox": return Target(app: app, environment: .sandbox)
        default: throw OfferServiceError.invalidRequest(field: "environment", "environment is Production or Sandbox.")
        }
    }

    /// Makes Apple's catalogue of the target's app match the policy (``RetentionCatalogueSync/sync(_:deleteDropped:report:)``)
    /// and audits it as `retention.sync` under `admin` (`nil`: not audited, the CLI's run).
    /// - Throws: ``RetentionMessagingError``.
    public func sync(
        _ target: Target,
        deleteDropped: Bool,
        by admin: String?,
        logger: Logger,
        report: @Sendable (String) -> Void = { _ in }
    ) async throws(RetentionMessagingError) -> RetentionCatalogueSync.Report {
        let result = try await catalogue(target).sync(target.app, deleteDropped: deleteDropped, report: report)
        if let admin {
            await record(
                "retention.sync",
                by: admin,
                target: target.app.bundleIdentifier,
                details: [
                    "environment": result.environment, "uploaded": "\(result.uploaded.count)", "deleted": "\(result.deleted.count)",
                    "defaultsSet": "\(result.defaultsSet.count)",
                ],
                logger: logger
            )
        }
        return result
    }

    /// Each catalogue item's approval state at Apple beside the policy, recorded in the store.
    /// - Throws: ``RetentionMessagingError``.
    public func status(_ target: Target) async throws(RetentionMessagingError) -> RetentionCatalogueSync.Report {
        try await catalogue(target).status(target.app)
    }

    /// Goes live (``RetentionMessagingSetup/goLive(_:productionURL:sandboxURL:originalTransactionId:resumeRequestId:pollInterval:timeout:report:)``:
    /// the Sandbox URL, Apple's performance test polled to its result, Production on PASS only) and audits the
    /// outcome as `retention.go-live` under `admin` (`nil`: not audited, the CLI's run).
    /// - Parameters:
    ///   - pollSeconds: seconds between polls, in ``pollSeconds`` (default ``defaultPollSeconds``).
    ///   - timeoutMinutes: how long to poll, in ``timeoutMinutes`` (default ``defaultTimeoutMinutes``).
    ///   - report: called with each line as it is reported (the answer has them all).
    /// - Throws: ``OfferServiceError`` `invalid_request` (fields `pollSeconds`, `timeoutMinutes`) before anything is
    ///   asked; ``RetentionMessagingError``.
    public func goLive(
        _ bundleIdentifier: String,
        productionURL: String,
        sandboxURL: String?,
        originalTransactionId: String,
        resumeRequestId: String?,
        pollSeconds: Int? = nil,
        timeoutMinutes: Int? = nil,
        by admin: String?,
        logger: Logger,
        report: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> GoLiveReport {
        let poll = pollSeconds ?? Self.defaultPollSeconds
        let minutes = timeoutMinutes ?? Self.defaultTimeoutMinutes
        guard Self.pollSeconds.contains(poll) else {
            throw OfferServiceError.invalidRequest(field: "pollSeconds", "pollSeconds is 1 to 600 (Sandbox allows a poll every 10 s).")
        }
        guard Self.timeoutMinutes.contains(minutes) else {
            throw OfferServiceError.invalidRequest(field: "timeoutMinutes", "timeoutMinutes is 1 to 1440.")
        }
        let lines = Lines()
        let outcome = try await setUp().goLive(
            bundleIdentifier,
            productionURL: productionURL,
            sandboxURL: sandboxURL,
            originalTransactionId: originalTransactionId,
            resumeRequestId: resumeRequestId,
            pollInterval: .seconds(poll),
            timeout: .seconds(minutes * 60),
            report: { line in
                lines.add(line)
                report(line)
            }
        )
        let answer: GoLiveReport
        switch outcome {
        case .live(let result): answer = GoLiveReport(outcome: "live", result: result, lines: lines.all)
        case .failed(let result): answer = GoLiveReport(outcome: "failed", result: result, lines: lines.all)
        case .inconclusive(let result): answer = GoLiveReport(outcome: "inconclusive", result: result, lines: lines.all)
        }
        if let admin {
            await record("retention.go-live", by: admin, target: bundleIdentifier, details: ["outcome": answer.outcome], logger: logger)
        }
        return answer
    }

    /// The approval state of each catalogue item of an app as the store last recorded it, by environment
    /// (`Production`, `Sandbox`) then identifier; Apple is not asked. Empty without a store.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func recordedStates(of bundleIdentifier: String) async throws(OfferServiceError) -> [String: [String: String]] {
        var states: [String: [String: String]] = [:]
        for environment in ["Production", "Sandbox"] {
            let records = try await storeCall {
                try await catalogues?.retentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment) ?? []
            }
            states[environment] = Dictionary(records.map { ($0.identifier, $0.state) }, uniquingKeysWith: { first, _ in first })
        }
        return states
    }

    /// The last performance test recorded for an app, `nil` when none was (or there is no store).
    public func lastPerformanceTest(_ bundleIdentifier: String) async -> RetentionMessagingSetup.PerformanceTestRecord? {
        await RetentionMessagingSetup.lastPerformanceTest(bundleIdentifier, store: documents)
    }

    private func setUp() throws(RetentionMessagingError) -> RetentionMessagingSetup {
        guard let setup else {
            throw RetentionMessagingError(
                .invalidConfiguration,
                "the App Store Server API is not configured (docs/app-store-api.md): Retention Messaging cannot be set up at Apple"
            )
        }
        return setup
    }

    private func catalogue(_ target: Target) throws(RetentionMessagingError) -> RetentionCatalogueSync {
        try setUp().catalogue(target.app.bundleIdentifier, environment: target.environment)
    }

    private func record(_ action: String, by admin: String, target: String, details: [String: String], logger: Logger) async {
        guard let audit else { return }
        await audit.recordOrWarn(
            AuditEvent(actor: admin, action: action, target: target, details: details),
            metadata: ["admin": "\(admin)", "target": "\(target)"],
            failure: "\(action) done, but the audit event could not be written",
            logger: logger
        )
    }
}

/// The lines a go-live reports, in order.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
