import Foundation
import OfferEligibility
import OfferModel
import OfferStore

extension OfferService {
    /// Records the customer's exposure to every running experiment whose gate `rule` holds, before the rule decides:
    /// a customer is exposed when a decision in the experiment's slot is made for them, whatever it is (the holdout's
    /// refusal included). Once per experiment and customer; nothing without a store.
    func recordExposures(_ rule: (any EligibilityRule)?, customer: CustomerKey, now: Date) async throws(OfferServiceError) {
        guard let store, let rule else { return }
        for experiment in OfferPolicy.experiments(in: rule) where experiment.isRunning(at: now) {
            let exposure = ExperimentExposure(
                experimentIdentifier: experiment.identifier,
                customer: customer,
                variant: experiment.variant(for: customer).name,
                exposedAt: now
            )
            _ = try await storeCall { try await store.recordExposure(exposure) }
        }
    }

    /// The customer's experiment in an offer's slot, as the eligibility answer shows it: `nil` when the offer is in
    /// none, or its experiment is not running.
    func experimentMembership(_ rule: any EligibilityRule, customer: CustomerKey, now: Date) -> ExperimentMembership? {
        guard let experiment = OfferPolicy.experiments(in: rule).first(where: { $0.isRunning(at: now) }) else { return nil }
        return ExperimentMembership(id: experiment.identifier, variant: experiment.variant(for: customer).name)
    }
}

/// `"experiment": {"id", "variant"}` of an eligibility entry or an explanation: the experiment that decides the
/// customer's offer in this slot, and their variant.
public struct ExperimentMembership: Sendable, Codable, Hashable {
    public var id: String
    public var variant: String
}

extension OfferService {
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

/// One experiment of `GET /admin/experiments`.
public struct ExperimentSummary: Sendable, Codable, Hashable {
    public var id: String
    public var bundleIdentifier: String
    public var productIdentifier: String
    public var channel: String
    public var metric: String
    public var running: Bool
    public var variants: [String]
    public var exposed: Int

    enum CodingKeys: String, CodingKey {
        case id
        case bundleIdentifier = "bundleId"
        case productIdentifier = "productId"
        case channel, metric, running, variants, exposed
    }
}
