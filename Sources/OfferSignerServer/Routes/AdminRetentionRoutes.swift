import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel
import OfferStore
import Synchronization

extension RetentionCatalogueSync.Report: ResponseEncodable {}

/// `POST /admin/retention/go-live`'s answer: the outcome, the test's result and what was reported on the way.
struct RetentionGoLiveAnswer: ResponseEncodable, Codable {
    /// `live`, `failed` or `inconclusive`.
    var outcome: String
    var result: RetentionPerformanceTestResult
    var lines: [String]
}

/// `POST /admin/retention/go-live`'s body.
struct RetentionGoLiveRequest: Decodable {
    var url: String
    var sandboxUrl: String?
    var originalTransactionId: String
    var requestId: String?
    var pollSeconds: Int?
    var timeoutMinutes: Int?
}

/// `/admin/retention/*`: Retention Messaging set up at Apple through ``RetentionMessagingSetup`` — the use case
/// `offer-signer retention sync|status|go-live` runs (docs/retention.md):
///
/// - `POST /admin/retention/sync?bundleId=…&environment=Production|Sandbox&deleteDropped=true` — the catalogue made to
///   match the policy in force;
/// - `GET /admin/retention/status?bundleId=…&environment=…` — each item's approval state beside the policy;
/// - `POST /admin/retention/go-live?bundleId=…` with `{"url", "sandboxUrl", "originalTransactionId", "requestId"?,
///   "pollSeconds"?, "timeoutMinutes"?}` — the Sandbox URL, Apple's performance test polled to its result, and
///   Production on PASS only (the answer comes when the test ends: about a minute, at most `timeoutMinutes`).
struct AdminRetentionRoutes {
    let service: OfferService
    let setup: RetentionMessagingSetup

    /// The setup of a service: the App Store Server API's configuration of each app it has a client for.
    static func setup(for service: OfferService, logger: Logger) -> RetentionMessagingSetup? {
        try? RetentionMessagingSetup(configurations: service.appStoreClients.mapValues(\.configuration), store: service.store, logger: logger)
    }

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.post("/retention/sync") { request, context -> RetentionCatalogueSync.Report in
            let (app, environment) = try target(request)
            let deleteDropped = request.uri.queryParameters["deleteDropped"].map { $0 == "true" } ?? false
            let report = try await setup.catalogue(app.bundleIdentifier, environment: environment).sync(app, deleteDropped: deleteDropped)
            await audit(
                context,
                "retention.sync",
                target: app.bundleIdentifier,
                details: [
                    "environment": report.environment, "uploaded": "\(report.uploaded.count)", "deleted": "\(report.deleted.count)",
                    "defaultsSet": "\(report.defaultsSet.count)",
                ]
            )
            return report
        }
        group.get("/retention/status") { request, _ -> RetentionCatalogueSync.Report in
            let (app, environment) = try target(request)
            return try await setup.catalogue(app.bundleIdentifier, environment: environment).status(app)
        }
        group.post("/retention/go-live") { request, context -> RetentionGoLiveAnswer in
            let (app, _) = try target(request)
            let body = try await request.decode(as: RetentionGoLiveRequest.self, context: context)
            let poll = body.pollSeconds ?? 15
            let minutes = body.timeoutMinutes ?? 10
            guard (1...600).contains(poll) else {
                throw APIError.invalidRequest(field: "pollSeconds", "pollSeconds is 1 to 600 (Sandbox allows a poll every 10 s).")
            }
            guard (1...60).contains(minutes) else { throw APIError.invalidRequest(field: "timeoutMinutes", "timeoutMinutes is 1 to 60.") }
            let lines = Lines()
            let outcome = try await setup.goLive(
                app.bundleIdentifier,
                productionURL: body.url,
                sandboxURL: body.sandboxUrl,
                originalTransactionId: body.originalTransactionId,
                resumeRequestId: body.requestId,
                pollInterval: .seconds(poll),
                timeout: .seconds(minutes * 60),
                report: { lines.add($0) }
            )
            let answer: RetentionGoLiveAnswer
            switch outcome {
            case .live(let result): answer = RetentionGoLiveAnswer(outcome: "live", result: result, lines: lines.all)
            case .failed(let result): answer = RetentionGoLiveAnswer(outcome: "failed", result: result, lines: lines.all)
            case .inconclusive(let result): answer = RetentionGoLiveAnswer(outcome: "inconclusive", result: result, lines: lines.all)
            }
            await audit(context, "retention.go-live", target: app.bundleIdentifier, details: ["outcome": answer.outcome])
            return answer
        }
    }

    /// The app (`bundleId`, default the policy's only app) and environment (`environment`, default Production).
    private func target(_ request: Request) throws -> (OfferPolicy.App, AppStoreEnvironment) {
        guard let policy = service.policy else {
            throw APIError(.noPolicy, "The service has no policy: there is no retention catalogue to set up.")
        }
        let bundle = request.uri.queryParameters["bundleId"].map(String.init) ?? (policy.apps.count == 1 ? policy.apps[0].bundleIdentifier : "")
        guard let app = policy.app(bundle) else {
            throw APIError.invalidRequest(field: "bundleId", "bundleId must name an app of the policy (required when it has several).")
        }
        switch request.uri.queryParameters["environment"].map(String.init)?.lowercased() ?? "production" {
        case "production": return (app, .production)
        case "sandbox": return (app, .sandbox)
        default: throw APIError.invalidRequest(field: "environment", "environment is Production or Sandbox.")
        }
    }

    private func audit(_ context: OfferSignerRequestContext, _ action: String, target: String, details: [String: String]) async {
        let admin = context.adminName ?? "unknown"
        do {
            try await service.store?.appendAudit(AuditEvent(actor: admin, action: action, target: target, details: details))
        } catch {
            context.logger.warning("\(action) done, but the audit event could not be written", metadata: ["admin": "\(admin)"])
        }
        context.logger.notice("audit: \(action)", metadata: ["admin": "\(admin)", "target": "\(target)"])
    }
}

/// The lines a go-live reports, in order.
private final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
