import Foundation
import OfferEligibility
import OfferErrors
import OfferModel
import OfferStore

/// Replays the decision log of the last days under a candidate policy and counts what would change
/// (docs/policy.md "Dry-run"). Streams: the log is read a page at a time and only the counts, at most
/// ``DryRunReport/maximumExamples`` examples and a bounded cache of decoded snapshots are kept.
///
/// ## Usage
///
/// ```swift
/// let candidate = try OfferPolicy(text: yaml)              // refused as `policy check` refuses it
/// let report = try await PolicyDryRun(store: store, candidate: candidate).run(days: 30)
/// print(report.grantedToRefused, report.refusedToGranted)
/// ```
public struct PolicyDryRun: Sendable {
    /// The longest window a dry-run replays, in days.
    public static let maximumDays = 3_650
    /// Decisions read per page.
    public var pageSize = 5_000

    let store: any PolicyDecisionLog
    let candidate: OfferPolicy
    let inForce: OfferPolicy?

    /// - Parameters:
    ///   - store: the store whose decision log is replayed.
    ///   - candidate: the policy to replay it under.
    ///   - inForce: the policy in force, whose experiments the candidate may keep (replayed with the variants the
    ///     log kept); `nil` when it is not known here, and then a candidate with an experiment is refused.
    public init(store: any PolicyDecisionLog, candidate: OfferPolicy, inForce: OfferPolicy? = nil) {
        self.store = store
        self.candidate = candidate
        self.inForce = inForce
    }

    /// Replays the decisions about the candidate's apps of the last `days` days before `now`, a page at a time,
    /// yielding between pages (run it on the ``BackgroundLane``, as ``SigningPipeline/dryRun(_:days:)`` does). A
    /// candidate the log cannot replay is refused before any decision is replayed: one that reads the customer's
    /// identifier, and — from one aggregate of the log, on a SQL store — one that looks back further than the
    /// window's decisions kept.
    /// - Throws: ``OfferServiceError`` `invalid_request` for days outside 1…``maximumDays``, `dry_run_needs_facts`
    ///   naming the candidate's rules that read what the log did not keep, `store_unavailable`;
    ///   `CancellationError` when the task is cancelled (between pages).
    public func run(days: Int, now: Date = Date()) async throws -> DryRunReport {
        guard (1...Self.maximumDays).contains(days) else {
            throw OfferServiceError.invalidRequest(field: "days", "days must be 1 to \(Self.maximumDays).")
        }
        try refuseRulesReadingIdentifiers()
        let until = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let since = until - Int64(days) * 86_400_000
        await store.flushDecisionLog()
        try await refuseRulesLookingBackFurther(since: since, until: until)
        var tally = DryRunTally(candidate: candidate)
        var cursor: PolicyDecisionCursor?
        while true {
            let page: [PolicyDecisionRecord]
            do {
                page = try await store.policyDecisions(
                    bundleIdentifiers: candidate.apps.map(\.bundleIdentifier),
                    since: since,
                    until: until,
                    after: cursor,
                    limit: pageSize
                )
            } catch {
                throw OfferServiceError.storeUnavailable
            }
            let missing = tally.addCarried(by: page, wanted: tally.snapshotsToRead(for: page))
            if !missing.isEmpty {
                do {
                    tally.add(snapshots: try await store.decisionSnapshots(hashes: missing))
                } catch {
                    throw OfferServiceError.storeUnavailable
                }
            }
            for record in page { tally.replay(record) }
            guard page.count == pageSize, let last = page.last else { break }
            cursor = PolicyDecisionCursor(decidedAt: last.decidedAt, identifier: last.identifier)
            // A slice at a time: whatever else waits for this thread runs before the next page.
            await Task.yield()
            try Task.checkCancellation()
        }
        // A store without the log's aggregate: the shortfalls the replay met.
        if let refusal = tally.shortfalls.refusal { throw refusal }
        let notReplayed = tally.report.notReplayed
        if tally.report.replayed == 0, notReplayed.unreadable + notReplayed.withoutExperimentVariant > 0 {
            throw OfferServiceError(
                .dryRunNeedsFacts,
                notReplayed.withoutExperimentVariant > 0
                    ? "None of the window's logged decisions could be decided again: \(notReplayed.withoutExperimentVariant) were made while "
                        + "the candidate's experiment ran but were logged without its variant (before the log kept variants, or under another "
                        + "experiment), \(notReplayed.unreadable) could not be read back. Dry-run a window after the experiment started, or the "
                        + "candidate without it."
                    : "None of the \(notReplayed.unreadable) logged decisions could be read back."
            )
        }
        return tally.finish(days: days)
    }

    /// A rule that looks back further than the window's decisions kept issued signatures cannot be replayed on
    /// them: refused from the log's aggregate (``DecisionLookbackSummary``), before any page is read.
    private func refuseRulesLookingBackFurther(since: Int64, until: Int64) async throws {
        let longest = DryRunTally.longestLookback(of: candidate)
        guard longest > 0, let log = store as? any DecisionLookbackSummary else { return }
        let lookbacks: [DecisionLookback]
        do {
            lookbacks = try await log.decisionLookbacks(
                bundleIdentifiers: candidate.apps.map(\.bundleIdentifier),
                since: since,
                until: until,
                below: Int64(min(longest, 1e12).rounded(.up))
            )
        } catch {
            throw OfferServiceError.storeUnavailable
        }
        var shortfalls = LookbackShortfalls()
        for lookback in lookbacks {
            guard let channel = DecisionChannel(rawValue: lookback.channel) else { continue }
            let rules = DryRunTally.rules(
                of: candidate,
                channel: channel,
                bundleIdentifier: lookback.bundleIdentifier,
                productIdentifier: lookback.productIdentifier,
                offerIdentifier: lookback.offerIdentifier
            )
            shortfalls.check(rules, kept: lookback.leastLookbackSeconds)
        }
        if let refusal = shortfalls.refusal { throw refusal }
    }

    /// A rule that reads the customer's identifier cannot be replayed: the log keeps only a keyed hash.
    private func refuseRulesReadingIdentifiers() throws(OfferServiceError) {
        var names: Set<String> = []
        for product in candidate.apps.flatMap(\.products) {
            let rules = product.offers.flatMap(\.rule.rules) + product.retention.flatMap(\.rule.rules) + (product.introductoryOffer?.rules ?? [])
            for rule in rules where rule is CustomerListRule { names.insert("\(rule.name) (\(product.productIdentifier))") }
        }
        guard names.isEmpty else {
            throw OfferServiceError(
                .dryRunNeedsFacts,
                """
                The candidate's rules read the customer's applicationUsername, which the decision log keeps only as a keyed hash: \
                \(names.sorted().joined(separator: ", ")). Dry-run a candidate without them.
                """
            )
        }
        // An experiment assigns by the customer's identifier too: only one kept as in force is replayed, with the
        // variant each decision was logged with.
        let changed = candidate.experiments.filter { !Self.keeps($0, inForce) }.map(\.identifier)
        if !changed.isEmpty, inForce == nil {
            throw OfferServiceError(
                .dryRunNeedsFacts,
                "The candidate has experiment \(changed.joined(separator: ", ")), and the policy in force is "
                    + "not known here (none was applied to the store, and OFFER_SIGNER_POLICY is not set), so whether the candidate keeps it "
                    + "cannot be told. Set OFFER_SIGNER_POLICY to the policy the service runs, dry-run it on the service (POST "
                    + "/admin/policy/dry-run or the console's Policy page), or dry-run the candidate without the experiment."
            )
        }
        guard changed.isEmpty else {
            let list = changed.joined(separator: ", ")
            throw OfferServiceError(
                .dryRunNeedsFacts,
                "The candidate changes experiment \(list): the policy in force has no such experiment, "
                    + "or it splits customers differently (app, product, channel, variants or weights). The decision log keeps customers only "
                    + "as a keyed hash, with the variant each decision got, so another split cannot be replayed. Keep experiment \(list) "
                    + "exactly as in force (start from the policy in force and change the rest), or dry-run the candidate without it."
            )
        }
    }

    /// Whether the candidate's experiment splits customers as the one in force of the same `id` does: the same app,
    /// product, channel and variants (names, answers, weights). Its dates may differ.
    static func keeps(_ experiment: OfferPolicy.Experiment, _ inForce: OfferPolicy?) -> Bool {
        guard let current = inForce?.experiment(experiment.identifier) else { return false }
        return current.bundleIdentifier == experiment.bundleIdentifier && current.productIdentifier == experiment.productIdentifier
            && current.channel == experiment.channel && current.variants == experiment.variants
    }
}
