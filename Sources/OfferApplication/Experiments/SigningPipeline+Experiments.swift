import Foundation
import OfferEligibility
import OfferModel
import OfferStore

extension SigningPipeline {
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
