import Foundation
import OfferExperiments
public import OfferModel

extension OfferPolicy {
    /// An offer experiment (`experiments:` in the policy file, docs/experiments.md): the customers of one slot — a
    /// product's promotional offers in the app, or its retention answer — split between variants by a hash of the
    /// experiment's `id` and the customer, so that each customer always gets the same variant, on every replica and
    /// after every restart, with nothing stored to agree on.
    public struct Experiment: Sendable {
        /// Where an experiment applies, in the words of the outcomes report (`channel`).
        public enum Channel: String, Sendable, CaseIterable {
            /// The product's promotional offers, signed for the app (`/v1/offers/*`).
            case app
            /// The product's retention answer (the App Store's real-time request).
            case retention
        }

        /// What decides which variant works best (every metric is read over `windowDays` after each exposure).
        public enum Metric: String, Sendable, CaseIterable {
            /// Customers who redeemed their variant's offer.
            case redeemed
            /// Customers who redeemed and renewed at full price at least once after the offer.
            case renewedAfterOffer
            /// Customers with any paid transaction in the product's subscription group, offer or not.
            case converted
            /// Customers still entitled to the subscription group at the window's end.
            case retained
            /// Realized revenue per mature customer, compared in each currency (a difference of means).
            case revenue
        }

        /// Which differences the report tests.
        public enum Comparisons: String, Sendable, CaseIterable {
            /// Each variant against the reference (the holdout, else the first variant).
            case reference
            /// Each variant against the reference, and every other pair of variants.
            case pairs
        }

        /// One arm: what its customers get.
        public struct Variant: Sendable, Hashable {
            /// The variant's name, unique in the experiment.
            public var name: String
            /// The offer (`app`) or retention entry's `messageIdentifier` (`retention`) the variant gives; `nil` for
            /// the holdout.
            public var answer: String?
            /// Its share of customers.
            public var weight: Int
            /// The holdout: no offer of the experiment (`app`), none of its entries (`retention`: the entries no variant names, else the fallback).
            public var isHoldout: Bool { answer == nil }
        }

        /// The experiment's `id`, stable for its life: changing it reshuffles every customer.
        public var identifier: String
        public var bundleIdentifier: String
        public var productIdentifier: String
        public var channel: Channel
        public var variants: [Variant]
        /// When it starts and ends (`start`, `end`); outside, the slot's offers are decided by their own rules alone.
        public var start: Date?
        public var end: Date?
        public var metric: Metric
        /// The customers per variant the experiment is planned for (`plannedCustomers`, default 2,000): where its
        /// always-valid intervals are narrowest (docs/experiments.md says how to choose it).
        public var plannedCustomers: Int
        /// The days after each customer's exposure every metric is read over (`windowDays`, default 30): a customer
        /// counts once that many days have passed.
        public var windowDays: Int
        /// The chance of any false finding among the comparisons shown (`alpha`, default 0.05), divided among them.
        public var alpha: Double
        /// Which differences the report tests (`comparisons`, default `reference`).
        public var comparisons: Comparisons
        /// Where it is in the policy file.
        public var location: String
        let assignment: ExperimentAssignment

        /// Whether customers are being assigned at `date`.
        public func isRunning(at date: Date) -> Bool {
            (start.map { date >= $0 } ?? true) && (end.map { date < $0 } ?? true)
        }

        /// The customer's variant: always the same for the same experiment `id`, weights and customer.
        public func variant(for customer: CustomerKey) -> Variant {
            let chosen = assignment.variant(for: Self.assignmentKey(customer))
            return variants.first { $0.name == chosen.name } ?? variants[0]
        }

        /// What the hash reads of a customer: the app and the customer identifier as the store keys them.
        static func assignmentKey(_ customer: CustomerKey) -> String {
            "\(customer.bundleIdentifier)\u{1F}\(customer.applicationUsername.lowercased())"
        }

        /// Whether a variant names `answer` (an offer or a retention message).
        public func names(_ answer: String) -> Bool { variants.contains { $0.answer == answer } }
    }

    /// The experiment of a slot, if the policy has one.
    public func experiment(bundleIdentifier: String, productIdentifier: String, channel: Experiment.Channel) -> Experiment? {
        experiments.first { $0.bundleIdentifier == bundleIdentifier && $0.productIdentifier == productIdentifier && $0.channel == channel }
    }

    /// An experiment by its `id`.
    public func experiment(_ identifier: String) -> Experiment? {
        experiments.first { $0.identifier == identifier }
    }
}

/// The gate an experiment puts on each offer or retention entry one of its variants names: while the experiment
/// runs, only the customer's own variant's answer holds (`experiment_variant` for the others, `experiment_holdout`
/// for every one of them when the customer is held out). Added by the policy, never written in it.
public struct ExperimentRule: EligibilityRule {
    public let name = "experiment"
    public let experiment: OfferPolicy.Experiment
    /// The offer or retention message this gate stands before.
    public let answer: String

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        guard experiment.isRunning(at: context.now) else { return .eligible() }
        let assigned = context.assignedVariants[experiment.identifier].flatMap { name in experiment.variants.first { $0.name == name } }
        let variant = assigned ?? experiment.variant(for: context.facts.key)
        if variant.answer == answer { return .eligible() }
        if variant.isHoldout {
            return .notEligible([
                reason("experiment_holdout", "This customer is in the holdout of experiment \(experiment.identifier), which gets no offer.")
            ])
        }
        return .notEligible([
            reason(
                "experiment_variant",
                """
                This customer is in variant \(variant.name) of experiment \(experiment.identifier), which gives \(variant.answer ?? "nothing") \
                instead.
                """
            )
        ])
    }
}

extension OfferPolicy {
    /// The experiments whose gates a rule holds (an offer's rules, a retention selection), each once, in order.
    public static func experiments(in rule: any EligibilityRule) -> [Experiment] {
        if let all = rule as? AllRules { return all.experiments }
        return experiments(inEach: [rule])
    }

    /// The experiments whose gates any of `rules` holds, each once, in order.
    static func experiments(inEach rules: [any EligibilityRule]) -> [Experiment] {
        var found: [Experiment] = []
        func visit(_ rule: any EligibilityRule) {
            switch rule {
            case let gate as ExperimentRule:
                if !found.contains(where: { $0.identifier == gate.experiment.identifier }) { found.append(gate.experiment) }
            case let all as AllRules: all.rules.forEach(visit)
            case let any as AnyRule: any.rules.forEach(visit)
            case let not as NotRule: visit(not.rule)
            case let selection as RetentionSelection: for entry in selection.entries { visit(entry.rule) }
            default: break
            }
        }
        rules.forEach(visit)
        return found
    }
}
