import Foundation
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel
import OfferStore

extension DryRunReport: ResponseEncodable {}

/// The policy a replica runs (`GET /admin/policy`, `PUT /admin/policy`, and `/readyz`'s `policy`).
struct PolicyInForceResponse: ResponseEncodable, Equatable {
    /// The policy's version (the SHA-256 of its text); `nil` when no policy is in force.
    var version: String?
    /// The revision of the store's policy document; 0 when the policy is the file's (or none).
    var revision: Int64
    /// `store`, `file` or `none`.
    var source: String

    init(_ inForce: PolicyInForce) {
        version = inForce.policy?.version
        revision = inForce.revision
        source = inForce.source
    }
}

/// `POST /admin/policy/dry-run?days=N`: replays the decision log of the last N days (default 30) under the
/// candidate policy in the body (YAML or JSON, UTF-8) and answers what would change (docs/policy.md "Dry-run").
/// Audited as `policy.dry-run` with the candidate's version and the counts. The replay runs on the background lane,
/// one at a time per replica: a second is 429 `dry_run_running` with `Retry-After` (``OfferService/dryRun(_:days:)``).
///
/// `GET /admin/policy`: the policy this replica runs. `PUT /admin/policy`: applies the policy in the body to every
/// replica sharing the store (``apply(_:service:admin:via:logger:)``), validated as the dry-run's candidate is.
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
                throw APIError(
                    .invalidPolicy,
                    "The candidate policy is not UTF-8 text; send the policy file's YAML or JSON as UTF-8."
                )
            }
            let candidate: OfferPolicy
            do {
                candidate = try OfferPolicy(text: text)
            } catch let error as PolicyError {
                // The message `policy check` prints.
                throw APIError(error)
            }
            return try await Self.dryRun(candidate, days: days, service: service, admin: context.adminName ?? "unknown", logger: context.logger)
        }
        group.get("/policy") { _, _ -> PolicyInForceResponse in
            PolicyInForceResponse(service.policyHolder.current)
        }
        group.put("/policy") { request, context -> PolicyInForceResponse in
            let candidate = try await Self.candidate(request)
            return try await Self.apply(candidate, service: service, admin: context.adminName ?? "unknown", logger: context.logger)
        }
    }

    /// The policy in a request's body (YAML or JSON, UTF-8), validated as `policy check` validates a file.
    /// - Throws: ``APIError`` 413, or 400 `invalid_policy` with the message `policy check` prints.
    static func candidate(_ request: Request) async throws -> OfferPolicy {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: maximumPolicySize)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: maximumPolicySize)
        }
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
            throw APIError(
                .invalidPolicy,
                "The policy is not UTF-8 text; send the policy file's YAML or JSON as UTF-8."
            )
        }
        do {
            return try OfferPolicy(text: text)
        } catch {
            throw APIError(error)
        }
    }

    /// Applies `policy` to every replica sharing the store (``StorePolicy/apply(_:)``), puts it in force here at once
    /// (the others within the time a NOTIFY takes), and audits it as `policy.apply` under `admin` with the revision and
    /// the version it replaced (`via` names a front end other than the admin API): the admin route's and the console's
    /// apply. The same policy applied again changes nothing and is not audited.
    /// - Throws: ``OfferServiceError`` `store_unavailable`, `policy_conflict`; 422 `policy_needs_store` without a store.
    static func apply(
        _ policy: OfferPolicy,
        service: OfferService,
        admin: String,
        via: String? = nil,
        logger: Logger
    ) async throws -> PolicyInForceResponse {
        guard let store = service.store else {
            throw APIError(
                .policyNeedsStore,
                """
                Applying a policy at run time needs the customer store (\(variable: .databaseUrl)), where every replica reads it; without one, \
                change \(variable: .policy) and restart.
                """
            )
        }
        let applied = try await StorePolicy(store: store).apply(policy)
        let inForce = PolicyInForce(policy: policy, revision: applied.revision)
        service.policyHolder.replace(with: inForce)
        guard applied.changed else { return PolicyInForceResponse(service.policyHolder.current) }
        var details = ["revision": "\(applied.revision)", "previousVersion": applied.previousVersion ?? "none"]
        var metadata: Logger.Metadata = ["admin": "\(admin)", "target": "\(policy.version)", "revision": "\(applied.revision)"]
        if let via { (details["via"], metadata["via"]) = (via, "\(via)") }
        do {
            try await store.appendAudit(AuditEvent(actor: admin, action: "policy.apply", target: policy.version, details: details))
        } catch {
            logger.warning("policy applied, but the audit event could not be written", metadata: ["admin": "\(admin)"])
        }
        logger.notice("audit: policy.apply", metadata: metadata)
        PolicyRefresher.announce(inForce, servedApps: Set(service.apps.keys), logger: logger)
        return PolicyInForceResponse(service.policyHolder.current)
    }

    /// Replays the decision log under `candidate` (``OfferService/dryRun(_:days:)``: on the background lane, one at
    /// a time) and audits it as `policy.dry-run` under `admin` (with the counts; `via` names a front end other than
    /// the admin API): the admin route's and the console's dry-run. An audit that cannot be written is logged, and
    /// the report still answered.
    static func dryRun(
        _ candidate: OfferPolicy,
        days: Int,
        service: OfferService,
        admin: String,
        via: String? = nil,
        logger: Logger
    ) async throws -> DryRunReport {
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
