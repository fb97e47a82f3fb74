import Hummingbird
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel
import Synchronization

extension RetentionCatalogueSync.Report: ResponseEncodable {}

extension RetentionAdministration.GoLiveReport: ResponseEncodable {}

/// `POST /admin/retention/go-live`'s body.
struct RetentionGoLiveRequest: Decodable {
    var url: String
    var sandboxUrl: String?
    var originalTransactionId: String
    var requestId: String?
    var pollSeconds: Int?
    var timeoutMinutes: Int?
}

/// `/admin/retention/*`: Retention Messaging set up at Apple through ``RetentionAdministration`` — the use case
/// `offer-signer retention sync|status|go-live` runs (docs/retention.md):
///
/// - `POST /admin/retention/sync?bundleId=…&environment=Production|Sandbox&deleteDropped=true` — the catalogue made to
///   match the policy in force;
/// - `GET /admin/retention/status?bundleId=…&environment=…` — each item's approval state beside the policy;
/// - `POST /admin/retention/go-live?bundleId=…` with `{"url", "sandboxUrl", "originalTransactionId", "requestId"?,
///   "pollSeconds"?, "timeoutMinutes"?}` — the Sandbox URL, Apple's performance test polled to its result, and
///   Production on PASS only (the answer comes when the test ends: about a minute, at most `timeoutMinutes`).
struct AdminRetentionRoutes {
    let retention: RetentionAdministration
    /// The longest a go-live may poll over HTTP, in minutes.
    static let maximumTimeoutMinutes = 60

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.post("/retention/sync") { request, context -> RetentionCatalogueSync.Report in
            let target = try target(request)
            let deleteDropped = request.uri.queryParameters["deleteDropped"].map { $0 == "true" } ?? false
            return try await retention.sync(target, deleteDropped: deleteDropped, by: context.adminName ?? "unknown", logger: context.logger)
        }
        group.get("/retention/status") { request, _ -> RetentionCatalogueSync.Report in
            try await retention.status(try target(request))
        }
        group.post("/retention/go-live") { request, context -> RetentionAdministration.GoLiveReport in
            let target = try target(request)
            let body = try await request.decode(as: RetentionGoLiveRequest.self, context: context)
            // The answer waits for the test's end: an hour at most over HTTP (the CLI may wait a day).
            if let minutes = body.timeoutMinutes, minutes > Self.maximumTimeoutMinutes {
                throw APIError.invalidRequest(field: "timeoutMinutes", "timeoutMinutes is 1 to 60.")
            }
            return try await retention.goLive(
                target.app.bundleIdentifier,
                productionURL: body.url,
                sandboxURL: body.sandboxUrl,
                originalTransactionId: body.originalTransactionId,
                resumeRequestId: body.requestId,
                pollSeconds: body.pollSeconds,
                timeoutMinutes: body.timeoutMinutes,
                by: context.adminName ?? "unknown",
                logger: context.logger
            )
        }
    }

    /// The app (`bundleId`, default the policy's only app) and environment (`environment`, default Production).
    private func target(_ request: Request) throws(OfferServiceError) -> RetentionAdministration.Target {
        try retention.target(
            bundleIdentifier: request.uri.queryParameters["bundleId"].map(String.init),
            environment: request.uri.queryParameters["environment"].map(String.init)
        )
    }
}
