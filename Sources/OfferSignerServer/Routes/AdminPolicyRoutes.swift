import Foundation
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferStore

extension DryRunReport: ResponseEncodable {}

/// `POST /admin/policy/dry-run?days=N`: replays the decision log of the last N days (default 30) under the
/// candidate policy in the body (YAML or JSON, UTF-8) and answers what would change (docs/policy.md "Dry-run").
/// Audited as `policy.dry-run` with the candidate's version and the counts. The replay runs on the background lane,
/// one at a time per replica: a second is 429 `dry_run_running` with `Retry-After` (``OfferService/dryRun(_:days:)``).
struct AdminPolicyRoutes {
    let service: OfferService
    /// The largest candidate accepted (a policy file is a few kilobytes).
    static let maximumPolicySize = 1 << 20

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.post("/policy/dry-run") { request, context -> DryRunReport in
            var days = 30
            if let text = request.uri.queryParameters["days"] {
                guard text.count <= 5, let number = Int(String(text)), (1...PolicyDryRun.maximumDays).contains(number) else {
                    throw APIError.invalidRequest(field: "days", "days is a whole number from 1 to \(PolicyDryRun.maximumDays).")
                }
                days = number
            }
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: Self.maximumPolicySize)
            } catch is NIOTooManyBytesError {
                throw APIError.payloadTooLarge(limit: Self.maximumPolicySize)
            }
            // Decoding would replace bytes that are not UTF-8 and dry-run another text than the one sent.
            guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
                throw APIError(status: .badRequest, code: "invalid_policy", message: "The candidate policy is not UTF-8 text; send the policy file's YAML or JSON as UTF-8.")
            }
            let candidate: OfferPolicy
            do {
                candidate = try OfferPolicy(text: text)
            } catch let error as PolicyError {
                // The message `policy check` prints.
                throw APIError(status: .badRequest, code: error.code.rawValue, message: error.message)
            }
            return try await Self.dryRun(candidate, days: days, service: service, admin: context.adminName ?? "unknown", logger: context.logger)
        }
    }

    /// Replays the decision log under `candidate` (``OfferService/dryRun(_:days:)``: on the background lane, one at
    /// a time) and audits it as `policy.dry-run` under `admin` (with the counts; `via` names a front end other than
    /// the admin API): the admin route's and the console's dry-run. An audit that cannot be written is logged, and
    /// the report still answered.
    static func dryRun(_ candidate: OfferPolicy, days: Int, service: OfferService, admin: String, via: String? = nil, logger: Logger) async throws -> DryRunReport {
        guard let store = service.store else { throw OfferServiceError.storeUnavailable }
        let report = try await service.dryRun(candidate, days: days)
        var details = [
            "days": "\(days)", "replayed": "\(report.replayed)", "grantedToRefused": "\(report.grantedToRefused)",
            "refusedToGranted": "\(report.refusedToGranted)", "changedOffer": "\(report.changedOffer)",
        ]
        var metadata: Logger.Metadata = ["admin": "\(admin)", "target": "\(candidate.version)"]
        if let via { (details["via"], metadata["via"]) = (via, "\(via)") }
        do {
            try await store.appendAudit(AuditEvent(actor: admin, action: "policy.dry-run", target: candidate.version, details: details))
        } catch {
            logger.warning("dry-run answered, but the audit event could not be written", metadata: ["admin": "\(admin)"])
        }
        logger.notice("audit: policy.dry-run", metadata: metadata)
        return report
    }
}
