import Metrics
import OfferEligibility

/// The pipeline's latency histograms and refusal counters (docs/observability.md). Created on first use, after
/// `serve` has bootstrapped the metrics system. Labels are bounded: a path, a rule name, a rule's code — never
/// a customer.
enum PipelineMetrics {
    /// Signing plus the self-verification, per signature.
    static let signing = Timer(label: "offer_signer_signing_duration_seconds", preferredDisplayUnit: .seconds)
    /// Recording an issued signature through the group commit (queueing, the batch's insert and its commit).
    static let groupCommitWrite = Timer(
        label: "offer_signer_store_write_duration_seconds",
        dimensions: [("path", "group_commit")],
        preferredDisplayUnit: .seconds
    )
    /// A locked customer transaction (lock, load, decide, sign, record, commit), for rules that depend on issued
    /// offers.
    static let customerTransactionWrite = Timer(
        label: "offer_signer_store_write_duration_seconds",
        dimensions: [("path", "customer_transaction")],
        preferredDisplayUnit: .seconds
    )

    /// Counts an answer to a retention request: `message`, `alternateProduct`, `promotionalOffer`,
    /// `fallback_after_deadline`, `no_answer`, `timed_out`.
    static func countRetentionAnswer(_ answer: String) {
        Counter(label: "offer_signer_retention_answers_total", dimensions: [("answer", answer)]).increment()
    }

    /// Counts a refused offer: once per reason, by the rule that said no and its code, and by the offer
    /// (``OfferMetrics/labels(_:bundleIdentifier:productIdentifier:offerIdentifier:)``: only what the policy lists).
    static func countRefusal(_ reasons: [EligibilityReason], offer: (product: String, offer: String) = (OfferMetrics.unlisted, OfferMetrics.unlisted))
    {
        for reason in reasons.isEmpty ? [EligibilityReason(rule: "unknown", code: "unknown", message: "")] : reasons {
            Counter(
                label: "offer_signer_eligibility_refusals_total",
                dimensions: [
                    ("rule", String(reason.rule.prefix(64))), ("code", String(reason.code.prefix(64))),
                    ("product", offer.product), ("offer", offer.offer),
                ]
            ).increment()
        }
    }

    /// Runs `body`, recording its duration in `timer` (also when it throws).
    static func time<T>(_ timer: Timer, _ body: () async throws -> T) async rethrows -> T {
        let start = ContinuousClock.now
        defer { timer.record(duration: ContinuousClock.now - start) }
        return try await body()
    }
}
