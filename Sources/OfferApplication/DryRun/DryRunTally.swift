import Foundation
import OfferEligibility
import OfferModel
import OfferStore

/// The counts of a dry-run as its decisions stream by: each logged decision decided again under the candidate,
/// on the facts it was made on, at the time it was made.
struct DryRunTally {
    let candidate: OfferPolicy
    private(set) var report = DryRunReport()
    /// The candidate's rules that look back further than the log kept for the decisions replayed.
    private(set) var shortfalls = LookbackShortfalls()
    private var byOffer: [OfferKey: (grantedToRefused: Int, refusedToGranted: Int)] = [:]
    private var signaturesBefore = 0
    private var signaturesAfter = 0
    /// Decoded snapshots by hash, bounded: emptied when full (a page needs at most its own).
    private var snapshots: [String: DecisionSnapshot] = [:]
    private static let snapshotCacheSize = 20_000

    private struct OfferKey: Hashable {
        var productIdentifier: String
        var offerIdentifier: String
    }

    /// One answer, as compared.
    private struct Outcome {
        var granted: Bool
        var offerIdentifier: String
        var retentionEntry: String?
        var reasons: [String]
        /// Whether the answer is a signature (a granted offer, an introductory-offer answer either way, a
        /// retention answer with a promotional offer).
        var signs: Bool
    }

    init(candidate: OfferPolicy) {
        self.candidate = candidate
    }

    mutating func replay(_ record: PolicyDecisionRecord) {
        guard let channel = DecisionChannel(rawValue: record.channel), let snapshot = snapshot(record) else {
            report.notReplayed.unreadable += 1
            return
        }
        // A running experiment of the candidate's that the decision has no logged variant of (made before the log kept
        // them, or under another experiment) cannot be decided again.
        let rules = Self.rules(
            of: candidate,
            channel: channel,
            bundleIdentifier: record.bundleIdentifier,
            productIdentifier: record.productIdentifier,
            offerIdentifier: record.offerIdentifier
        )
        let decidedAt = Date(timeIntervalSince1970: Double(record.decidedAt) / 1000)
        for experiment in rules.flatMap({ OfferPolicy.experiments(in: $0) }) where experiment.isRunning(at: decidedAt) {
            guard record.experimentIdentifier == experiment.identifier, record.experimentVariant != nil else {
                report.notReplayed.withoutExperimentVariant += 1
                return
            }
        }
        let before = Outcome(
            granted: record.granted,
            offerIdentifier: record.offerIdentifier,
            retentionEntry: record.retentionEntry,
            reasons: record.reasons.isEmpty ? [] : record.reasons.split(separator: ",").map(String.init),
            signs: channel == .introductory || (record.granted && !record.offerIdentifier.isEmpty)
        )
        let after = decide(record, channel: channel, snapshot: snapshot)
        report.replayed += 1
        signaturesBefore += before.signs ? 1 : 0
        signaturesAfter += after.signs ? 1 : 0
        let changed: Bool
        switch (before.granted, after.granted) {
        case (true, false):
            report.grantedToRefused += 1
            byOffer[OfferKey(productIdentifier: record.productIdentifier, offerIdentifier: before.offerIdentifier), default: (0, 0)]
                .grantedToRefused += 1
            changed = true
        case (false, true):
            report.refusedToGranted += 1
            byOffer[OfferKey(productIdentifier: record.productIdentifier, offerIdentifier: after.offerIdentifier), default: (0, 0)]
                .refusedToGranted += 1
            changed = true
        case (true, true) where before.offerIdentifier != after.offerIdentifier || before.retentionEntry != after.retentionEntry:
            report.changedOffer += 1
            changed = true
        default:
            report.unchanged += 1
            changed = false
        }
        if changed, report.examples.count < DryRunReport.maximumExamples {
            report.examples.append(
                DryRunReport.Example(
                    decidedAt: Date(timeIntervalSince1970: Double(record.decidedAt) / 1000),
                    channel: record.channel,
                    customerHash: record.customerHash,
                    productIdentifier: record.productIdentifier,
                    offerIdentifier: record.offerIdentifier,
                    before: Self.answer(before),
                    after: Self.answer(after)
                )
            )
        }
    }

    func finish(days: Int) -> DryRunReport {
        var report = report
        report.byOffer = byOffer.sorted { ($0.key.productIdentifier, $0.key.offerIdentifier) < ($1.key.productIdentifier, $1.key.offerIdentifier) }
            .map {
                DryRunReport.OfferChanges(
                    productIdentifier: $0.key.productIdentifier,
                    offerIdentifier: $0.key.offerIdentifier,
                    grantedToRefused: $0.value.grantedToRefused,
                    refusedToGranted: $0.value.refusedToGranted
                )
            }
        func perDay(_ count: Int) -> Double { (Double(count) / Double(days) * 100).rounded() / 100 }
        report.signaturesPerDay = .init(
            before: perDay(signaturesBefore),
            after: perDay(signaturesAfter),
            change: perDay(signaturesAfter - signaturesBefore)
        )
        return report
    }

    private static func answer(_ outcome: Outcome) -> DryRunReport.Answer {
        DryRunReport.Answer(
            granted: outcome.granted,
            offerIdentifier: outcome.offerIdentifier,
            retentionEntry: outcome.retentionEntry,
            reasons: outcome.reasons
        )
    }

    /// The distinct snapshots a page needs that are not decoded yet; when they would not fit beside those decoded,
    /// the cache is emptied and all of the page's are read again (a page holds at most ``PolicyDryRun/pageSize``).
    mutating func snapshotsToRead(for page: [PolicyDecisionRecord]) -> [String] {
        var seen: Set<String> = []
        let distinct = page.compactMap { seen.insert($0.factsHash).inserted ? $0.factsHash : nil }
        let missing = distinct.filter { snapshots[$0] == nil }
        guard snapshots.count + missing.count > Self.snapshotCacheSize else { return missing }
        snapshots.removeAll(keepingCapacity: true)
        return distinct
    }

    /// Decodes the snapshots among `wanted` that the page's decisions carry in their rows (schema version 24); the
    /// hashes of the others, in their order, to be read from the store (decisions written before keep theirs in
    /// `decision_facts`).
    mutating func addCarried(by page: [PolicyDecisionRecord], wanted: [String]) -> [String] {
        var left = Set(wanted)
        for record in page where !record.factsSnapshot.isEmpty && left.contains(record.factsHash) {
            left.remove(record.factsHash)
            if let decoded = try? DecisionSnapshot.decode(record.factsSnapshot) { snapshots[record.factsHash] = decoded }
        }
        return wanted.filter { left.contains($0) }
    }

    /// Decodes the snapshots read for a page.
    mutating func add(snapshots texts: [String: String]) {
        for (hash, text) in texts {
            if let decoded = try? DecisionSnapshot.decode(text) { snapshots[hash] = decoded }
        }
    }

    private func snapshot(_ record: PolicyDecisionRecord) -> DecisionSnapshot? {
        snapshots[record.factsHash]
    }

    /// The candidate's answer to a logged decision.
    private mutating func decide(_ record: PolicyDecisionRecord, channel: DecisionChannel, snapshot: DecisionSnapshot) -> Outcome {
        let now = Date(timeIntervalSince1970: Double(record.decidedAt) / 1000)
        func refused(_ code: String) -> Outcome {
            Outcome(granted: false, offerIdentifier: "", reasons: ["policy:\(code)"], signs: channel == .introductory)
        }
        guard let product = candidate.app(record.bundleIdentifier)?.product(record.productIdentifier) else { return refused("unknown_product") }
        var context = snapshot.context(
            bundleIdentifier: record.bundleIdentifier,
            productIdentifier: record.productIdentifier,
            offerIdentifier: record.offerIdentifier,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier,
            now: now
        )
        if let experiment = record.experimentIdentifier, let variant = record.experimentVariant { context.assignedVariants = [experiment: variant] }
        switch channel {
        case .legacy, .jws:
            guard let offer = product.offer(record.offerIdentifier) else { return refused("unknown_offer") }
            shortfalls.check(offer.rule.rules, kept: record.lookbackSeconds)
            let decision = offer.rule.evaluate(context)
            return Outcome(
                granted: decision.isEligible,
                offerIdentifier: record.offerIdentifier,
                reasons: Self.codes(decision),
                signs: decision.isEligible
            )
        case .introductory:
            guard let rule = product.introductoryOffer else { return Outcome(granted: true, offerIdentifier: "", reasons: [], signs: true) }
            shortfalls.check(rule.rules, kept: record.lookbackSeconds)
            let decision = rule.evaluate(context)
            return Outcome(granted: decision.isEligible, offerIdentifier: "", reasons: Self.codes(decision), signs: true)
        case .retention:
            shortfalls.check(product.retention.flatMap(\.rule.rules), kept: record.lookbackSeconds)
            let choice = OfferPolicy.chooseRetention(product.retention, in: context)
            guard let entry = choice.entry else {
                return Outcome(granted: false, offerIdentifier: "", reasons: Self.codes(choice.decision), signs: false)
            }
            return Outcome(
                granted: true,
                offerIdentifier: entry.offerIdentifier,
                retentionEntry: entry.messageIdentifier,
                reasons: [],
                signs: !entry.offerIdentifier.isEmpty
            )
        }
    }

    private static func codes(_ decision: EligibilityDecision) -> [String] {
        decision.reasons.map { "\($0.rule):\($0.code)" }
    }

    /// The candidate's rules that would decide a logged decision on `channel` about this offer, as ``decide`` finds
    /// them (none for a product or offer the candidate does not list).
    static func rules(
        of candidate: OfferPolicy,
        channel: DecisionChannel,
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String
    ) -> [any EligibilityRule] {
        guard let product = candidate.app(bundleIdentifier)?.product(productIdentifier) else { return [] }
        switch channel {
        case .legacy, .jws: return product.offer(offerIdentifier)?.rule.rules ?? []
        case .introductory: return product.introductoryOffer?.rules ?? []
        case .retention: return product.retention.flatMap(\.rule.rules)
        }
    }

    /// The longest any of the candidate's rules looks back, in seconds (0: none looks back).
    static func longestLookback(of candidate: OfferPolicy) -> TimeInterval {
        let rules = candidate.apps.flatMap(\.products).flatMap { product in
            product.offers.flatMap(\.rule.rules) + product.retention.flatMap(\.rule.rules) + (product.introductoryOffer?.rules ?? [])
        }
        return rules.compactMap(\.lookback).max() ?? 0
    }
}

/// The candidate's rules that look back further than the log kept for some decisions, by name: how far they look
/// and the least the log kept.
struct LookbackShortfalls {
    private(set) var byRule: [String: (needed: TimeInterval, kept: Int64)] = [:]

    var isEmpty: Bool { byRule.isEmpty }

    /// Notes each rule that looks back further than `kept` seconds.
    mutating func check(_ rules: [any EligibilityRule], kept: Int64) {
        for rule in rules {
            guard let needed = rule.lookback, needed > Double(kept) else { continue }
            let known = byRule[rule.name]
            byRule[rule.name] = (max(known?.needed ?? 0, needed), min(known?.kept ?? .max, kept))
        }
    }

    /// `dry_run_needs_facts` naming the rules, or `nil` when none falls short.
    var refusal: OfferServiceError? {
        guard !byRule.isEmpty else { return nil }
        let rules = byRule.sorted { $0.key < $1.key }.map { name, window in
            """
            \(name) (looks back \(describeDuration(window.needed)); the log kept \
            \(window.kept == 0 ? "no issued signatures" : describeDuration(TimeInterval(window.kept))) for some decisions)
            """
        }
        return OfferServiceError(
            .dryRunNeedsFacts,
            """
            The candidate's rules need issued signatures the decision log did not keep: \(rules.joined(separator: "; ")). Replay fewer days, or \
            wait until decisions logged under a policy that looks back as far have accumulated.
            """
        )
    }
}
