import Foundation

/// A rule made of other rules (`all`, `any`): it looks back as far as the furthest of them and depends on issued
/// offers when one of them does.
public protocol CombiningRule: EligibilityRule {
    /// The rules combined.
    var rules: [any EligibilityRule] { get }
}

extension CombiningRule {
    public var lookback: TimeInterval? { rules.compactMap(\.lookback).max() }
    public var dependsOnIssuedOffers: Bool { rules.contains { $0.dependsOnIssuedOffers } }
}

/// Every rule must say yes (`all`); the reasons of every no are reported.
public struct AllRules: CombiningRule {
    public let name = "all"
    public let rules: [any EligibilityRule]
    /// The experiments whose gates the rules hold, each once, in order (``OfferPolicy/experiments(in:)``): found once,
    /// when the rules are made, since a decision asks for them on every request.
    let experiments: [OfferPolicy.Experiment]

    public init(_ rules: [any EligibilityRule]) {
        self.rules = rules
        experiments = OfferPolicy.experiments(inEach: rules)
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        var reasons: [EligibilityReason] = []
        var grant: String?
        for rule in rules {
            switch rule.evaluate(context) {
            case .eligible(let used, _): grant = grant ?? used
            case .notEligible(let more): reasons += more
            }
        }
        return reasons.isEmpty ? .eligible(grant: grant) : .notEligible(reasons)
    }
}

/// At least one rule must say yes (`any`); when none does, the reasons of all of them are reported.
public struct AnyRule: CombiningRule {
    public let name = "any"
    public let rules: [any EligibilityRule]

    public init(_ rules: [any EligibilityRule]) { self.rules = rules }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        var reasons: [EligibilityReason] = []
        for rule in rules {
            switch rule.evaluate(context) {
            case .eligible(let grant, _): return .eligible(grant: grant)
            case .notEligible(let more): reasons += more
            }
        }
        return .notEligible(reasons.isEmpty ? [reason("no_alternative", "None of the alternatives applies.")] : reasons)
    }
}

/// The rule must say no (`not`).
public struct NotRule: EligibilityRule {
    public let name = "not"
    public let rule: any EligibilityRule

    public init(_ rule: any EligibilityRule) { self.rule = rule }

    public var lookback: TimeInterval? { rule.lookback }
    public var dependsOnIssuedOffers: Bool { rule.dependsOnIssuedOffers }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        rule.evaluate(context).isEligible
            ? .notEligible([
                reason(
                    "excluded_by_\(rule.name.replacingOccurrences(of: "-", with: "_"))",
                    "The customer matches \(rule.name), which excludes this offer."
                )
            ])
            : .eligible()
    }
}
