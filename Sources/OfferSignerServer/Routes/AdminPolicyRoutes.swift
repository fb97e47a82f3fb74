import Foundation
import Hummingbird
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel

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
/// one at a time per replica: a second is 429 `dry_run_running` with `Retry-After` (``PolicyAdministration/dryRun(_:days:by:via:logger:)``).
///
/// `GET /admin/policy`: the policy this replica runs. `PUT /admin/policy`: applies the policy in the body to every
/// replica sharing the store (``PolicyAdministration/apply(_:by:via:logger:)``), validated as the dry-run's candidate is.
struct AdminPolicyRoutes {
    let policy: PolicyAdministration
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
            return try await policy.dryRun(candidate, days: days, by: context.adminName ?? "unknown", logger: context.logger)
        }
        group.get("/policy") { _, _ -> PolicyInForceResponse in
            PolicyInForceResponse(policy.inForce)
        }
        group.put("/policy") { request, context -> PolicyInForceResponse in
            let candidate = try await Self.candidate(request)
            return PolicyInForceResponse(try await policy.apply(candidate, by: context.adminName ?? "unknown", logger: context.logger))
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
}
