import Foundation
import OfferEligibility
import OfferModel
import OfferStore

/// The reports of the policy's experiments (`GET /admin/experiments`, `GET /admin/experiments/{id}`, the console's
/// Experiments pages; docs/experiments.md): each experiment of the policy in force read from the store's
/// ``ExperimentLog``.
public struct ExperimentReporting: Sendable {
    /// The store's experiment log; `nil` (no store): a report is `store_unavailable`, a summary counts no exposure.
    let store: (any ExperimentLog)?
    let policies: PolicyHolder

    /// - Parameters:
    ///   - store: the store's experiment log, or `nil`.
    ///   - policies: the policy in force, whose experiments are reported.
    public init(store: (any ExperimentLog)?, policies: PolicyHolder) {
        self.store = store
        self.policies = policies
    }

    private var policy: OfferPolicy? { policies.policy }

    /// The report of experiment `identifier` of the policy in force (`GET /admin/experiments/{id}`).
    /// - Throws: ``OfferServiceError`` 404 `unknown_experiment` when the policy has none by that id, 503 without a store.
    public func experimentReport(_ identifier: String, now: Date = Date()) async throws(OfferServiceError) -> ExperimentReport {
        guard let experiment = policy?.experiment(identifier) else {
            throw OfferServiceError(
                .unknownExperiment,
                "The policy in force has no experiment \(identifier.prefix(64)): GET /admin/experiments lists those it has."
            )
        }
        guard let store else { throw OfferServiceError.storeUnavailable }
        // What each variant's customers may redeem: its offer; the holdout, any offer of the experiment (a leak).
        let product = policy?.app(experiment.bundleIdentifier)?.product(experiment.productIdentifier)
        func offers(of answer: String?) -> [String] {
            switch experiment.channel {
            case .app: return answer.map { [$0] } ?? []
            case .retention:
                return product?.retention.filter { answer == nil || $0.messageIdentifier == answer }.map(\.offerIdentifier).filter { !$0.isEmpty }
                    ?? []
            }
        }
        let everyOffer = experiment.variants.flatMap { offers(of: $0.answer) }
        let asked = Dictionary(uniqueKeysWithValues: experiment.variants.map { ($0.name, $0.isHoldout ? everyOffer : offers(of: $0.answer)) })
        // Every metric over the customers whose window has passed, each within their own window.
        let window = Int64(experiment.windowDays) * 86_400_000
        let query = ExperimentOutcomeQuery(
            experimentIdentifier: experiment.identifier,
            bundleIdentifier: experiment.bundleIdentifier,
            productIdentifier: experiment.productIdentifier,
            offers: asked,
            window: window,
            matureAt: Self.milliseconds(now) - window,
            exposedBefore: experiment.end.map(Self.milliseconds)
        )
        let counts = try await storeCall { try await store.experimentOutcomes(query) }
        return try ExperimentReport(experiment: experiment, counts: counts, now: now)
    }

    private static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The experiments of the policy in force, with their customers exposed so far.
    public func experimentSummaries() async throws(OfferServiceError) -> [ExperimentSummary] {
        guard let experiments = policy?.experiments else { return [] }
        var summaries: [ExperimentSummary] = []
        for experiment in experiments {
            var exposed = 0
            if let store {
                exposed = try await storeCall { try await store.exposureCounts(experimentIdentifier: experiment.identifier) }.values.reduce(0, +)
            }
            summaries.append(
                ExperimentSummary(
                    id: experiment.identifier,
                    bundleIdentifier: experiment.bundleIdentifier,
                    productIdentifier: experiment.productIdentifier,
                    channel: experiment.channel.rawValue,
                    metric: experiment.metric.rawValue,
                    running: experiment.isRunning(at: Date()),
                    variants: experiment.variants.map(\.name),
                    exposed: exposed
                )
            )
        }
        return summaries
    }
}
