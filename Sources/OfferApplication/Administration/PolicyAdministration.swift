import Foundation
import Logging
import OfferEligibility
import OfferModel
import OfferStore

/// What admins do to the policy (`/admin/policy…`, the console's policy page): read the policy in force, dry-run a
/// candidate against the decision log, and apply a policy to every replica sharing the store. A dry-run and an
/// applied change are audited with the admin who asked (`policy.dry-run`, `policy.apply`); an audit row that cannot
/// be written is logged, and the answer still given (the change is made).
public struct PolicyAdministration: Sendable {
    let documents: (any SharedDocuments)?
    let audit: AuditTrail?
    let policies: PolicyHolder
    let servedApps: Set<String>
    let replay: @Sendable (OfferPolicy, Int) async throws -> DryRunReport
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - documents: where the policy every replica runs is kept (``StorePolicy``); `nil` without a store, and then
    ///     a policy cannot be applied at run time.
    ///   - audit: where dry-runs and applied policies are audited; `nil` without a store, and then a dry-run is
    ///     refused (the decision log is the store's).
    ///   - policies: the policy in force on this replica, replaced when one is applied.
    ///   - servedApps: the apps this replica serves (an applied policy's apps are announced against them).
    ///   - replay: replays the decision log of the last days under a candidate (``SigningPipeline/dryRun(_:days:)``: on
    ///     the background lane, one at a time).
    ///   - now: the clock audit rows are dated with.
    public init(
        documents: (any SharedDocuments)?,
        audit: AuditTrail?,
        policies: PolicyHolder,
        servedApps: Set<String>,
        replay: @escaping @Sendable (OfferPolicy, Int) async throws -> DryRunReport,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.documents = documents
        self.audit = audit
        self.policies = policies
        self.servedApps = servedApps
        self.replay = replay
        self.now = now
    }

    /// The policy this replica runs, with its revision in the store (0: the file's, or none).
    public var inForce: PolicyInForce { policies.current }

    /// Whether a dry-run can be asked: it replays the decision log, which needs the customer store.
    public var canDryRun: Bool { audit != nil }

    /// Puts the policy applied to the store in force here, when one was (what `serve` runs: the store's, else the
    /// file's): a tool beside the service (`offer-signer policy dry-run`) reads it before it replays, since it runs
    /// no ``PolicyRefresher``. Nothing changes without a store.
    /// - Throws: ``OfferServiceError`` `store_unavailable`, `invalid_policy` for a stored text that no longer reads.
    public func adoptStoredPolicy() async throws(OfferServiceError) {
        guard let documents, let stored = try await StorePolicy(store: documents).load() else { return }
        policies.replace(with: stored)
    }

    /// Replays the decision log of the last `days` days under `candidate` and audits it as `policy.dry-run` under
    /// `admin` with the candidate's version and the counts (`via` names a front end other than the admin API; `nil`
    /// `admin`: not audited, a tool's offline run).
    /// - Throws: ``OfferServiceError`` `store_unavailable` without a store, and what the replay throws
    ///   (`dry_run_running`, `dry_run_needs_facts`, `invalid_request` for `days`, `store_unavailable`).
    public func dryRun(
        _ candidate: OfferPolicy,
        days: Int,
        by admin: String?,
        via: String? = nil,
        logger: Logger
    ) async throws -> DryRunReport {
        guard let audit else { throw OfferServiceError.storeUnavailable }
        let report = try await replay(candidate, days)
        guard let admin else { return report }
        var details = [
            "days": "\(days)", "replayed": "\(report.replayed)", "grantedToRefused": "\(report.grantedToRefused)",
            "refusedToGranted": "\(report.refusedToGranted)", "changedOffer": "\(report.changedOffer)",
        ]
        var metadata: Logger.Metadata = ["admin": "\(admin)", "target": "\(candidate.version)"]
        if let via { (details["via"], metadata["via"]) = (via, "\(via)") }
        await audit.recordOrWarn(
            AuditEvent(at: now(), actor: admin, action: "policy.dry-run", target: candidate.version, details: details),
            metadata: metadata,
            failure: "dry-run answered, but the audit event could not be written",
            logger: logger
        )
        return report
    }

    /// Applies `policy` to every replica sharing the store (``StorePolicy/apply(_:)``), puts it in force here at once
    /// (the others within the time a NOTIFY takes), and audits it as `policy.apply` under `admin` with the revision
    /// and the version it replaced (`via` names a front end other than the admin API). The same policy applied again
    /// changes nothing and is not audited.
    /// - Returns: the policy in force afterwards.
    /// - Throws: ``OfferServiceError`` `policy_needs_store` without a store, `store_unavailable`, `policy_conflict`.
    public func apply(_ policy: OfferPolicy, by admin: String, via: String? = nil, logger: Logger) async throws(OfferServiceError) -> PolicyInForce {
        guard let documents, let audit else {
            throw OfferServiceError(
                .policyNeedsStore,
                """
                Applying a policy at run time needs the customer store (OFFER_SIGNER_DATABASE_URL), where every replica reads it; without one, \
                change OFFER_SIGNER_POLICY and restart.
                """
            )
        }
        let applied = try await StorePolicy(store: documents).apply(policy)
        let inForce = PolicyInForce(policy: policy, revision: applied.revision)
        policies.replace(with: inForce)
        guard applied.changed else { return policies.current }
        var details = ["revision": "\(applied.revision)", "previousVersion": applied.previousVersion ?? "none"]
        var metadata: Logger.Metadata = ["admin": "\(admin)", "target": "\(policy.version)", "revision": "\(applied.revision)"]
        if let via { (details["via"], metadata["via"]) = (via, "\(via)") }
        await audit.recordOrWarn(
            AuditEvent(at: now(), actor: admin, action: "policy.apply", target: policy.version, details: details),
            metadata: metadata,
            failure: "policy applied, but the audit event could not be written",
            logger: logger
        )
        PolicyRefresher.announce(inForce, servedApps: servedApps, logger: logger)
        return policies.current
    }
}

extension AuditTrail {
    /// Appends `event` to the audit log and logs it (`audit: <action>` with `metadata`) even when the row cannot be
    /// written: then `failure` is logged as a warning naming the admin, and the change it audits stands.
    func recordOrWarn(_ event: AuditEvent, metadata: Logger.Metadata, failure: String, logger: Logger) async {
        do {
            try await log.appendAudit(event)
        } catch {
            logger.warning("\(failure)", metadata: ["admin": "\(event.actor)"])
        }
        logger.notice("audit: \(event.action)", metadata: metadata)
    }
}
