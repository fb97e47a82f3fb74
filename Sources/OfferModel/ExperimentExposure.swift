import Foundation

/// A customer's first decision in an experiment's slot (docs/experiments.md): which variant they were given and when.
/// Recorded once per experiment and customer — holdouts too, who sign nothing — so that results count everyone
/// exposed, across restarts and replicas.
public struct ExperimentExposure: Sendable, Hashable {
    /// The experiment's `id`.
    public var experimentIdentifier: String
    /// The customer, as the store keys customers.
    public var customer: CustomerKey
    /// The variant's name.
    public var variant: String
    /// The first exposure.
    public var exposedAt: Date

    public init(experimentIdentifier: String, customer: CustomerKey, variant: String, exposedAt: Date) {
        self.experimentIdentifier = experimentIdentifier
        self.customer = customer
        self.variant = variant
        self.exposedAt = exposedAt
    }
}
