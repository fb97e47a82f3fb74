import Foundation
import OfferModel

/// Rules by name, as the policy file names them. ``builtIn`` holds every rule of docs/policy.md; add your
/// own with ``register(_:_:)``.
public struct RuleRegistry: Sendable {
    /// Builds a rule from its parameters.
    public typealias Factory = @Sendable (RuleParameters) throws(PolicyError) -> any EligibilityRule

    private var factories: [String: Factory] = [:]

    /// An empty registry.
    public init() {}

    /// Registers (or replaces) a rule.
    public mutating func register(_ name: String, _ factory: @escaping Factory) {
        factories[name] = factory
    }

    /// The names known.
    public var names: [String] { factories.keys.sorted() }

    /// Builds the rule a policy node describes: `{name: {parameters}}` or a bare `name`.
    public func rule(from node: PolicyNode) throws(PolicyError) -> any EligibilityRule {
        let name: String
        let parameters: PolicyNode
        switch node.value {
        case .scalar(let bare):
            name = bare
            parameters = PolicyNode(value: .null, path: node.path, position: node.position)
        case .map(let entries) where entries.count == 1:
            name = entries[0].key
            parameters = entries[0].value
        default:
            throw PolicyError(.invalidPolicy, "\(node.location): a rule is written as its name, or as {name: {parameters}}")
        }
        guard let factory = factories[name] else {
            throw PolicyError(.invalidPolicy, "\(node.location): unknown rule '\(name)'; known rules: \(names.joined(separator: ", "))")
        }
        return try factory(RuleParameters(node: parameters, ruleName: name, registry: self))
    }

    /// The built-in rules and the combinators `all`, `any`, `not`.
    public static let builtIn: RuleRegistry = {
        var registry = RuleRegistry()
        registry.register("all") { parameters throws(PolicyError) in AllRules(try parameters.nestedRules()) }
        registry.register("any") { parameters throws(PolicyError) in AnyRule(try parameters.nestedRules()) }
        registry.register("not") { parameters throws(PolicyError) in
            let rules = try parameters.nestedRules()
            guard rules.count == 1 else { throw PolicyError(.invalidPolicy, "\(parameters.node.location): not takes exactly one rule") }
            return NotRule(rules[0])
        }
        registry.register("app-store-subscriber") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return HasOrHadSubscriptionRule()
        }
        registry.register("active-subscriber") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return ActiveSubscriberRule()
        }
        registry.register("lapsed") { parameters throws(PolicyError) in
            try parameters.allowOnly(["minDays", "maxDays"])
            let minimum = try parameters.integer("minDays", default: 0)
            let maximum = try parameters.optionalInteger("maxDays")
            if let maximum, maximum < minimum {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(parameters.node.location): lapsed's window is empty: minDays (\(minimum)) is after maxDays (\(maximum)), so no customer \
                    could ever satisfy it; swap them
                    """
                )
            }
            return LapsedRule(minimumDays: minimum, maximumDays: maximum)
        }
        registry.register("auto-renew-off") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return AutoRenewOffRule()
        }
        registry.register("billing-issue") { parameters throws(PolicyError) in
            try parameters.allowOnly(["states"])
            let names = try parameters.strings("states") ?? ["billing-retry", "grace-period"]
            var states: Set<String> = []
            for name in names {
                guard ["billing-retry", "grace-period"].contains(name) else {
                    throw PolicyError(
                        .invalidPolicy,
                        "\(parameters.node.location): billing-issue states are billing-retry and grace-period, not '\(name)'"
                    )
                }
                states.insert(name)
            }
            return BillingIssueRule(states: states)
        }
        registry.register("downgraded") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return DowngradedRule()
        }
        registry.register("loyalty") { parameters throws(PolicyError) in
            try parameters.allowOnly(["minRenewals"])
            return LoyaltyRule(minimumRenewals: try parameters.integer("minRenewals", minimum: 1))
        }
        registry.register("customer-service-grant") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return CustomerServiceGrantRule()
        }
        registry.register("churn-risk") { parameters throws(PolicyError) in
            try parameters.allowOnly(["flag", "values"])
            return ChurnRiskRule(flag: try parameters.string("flag") ?? "churnRisk", values: Set(try parameters.strings("values") ?? ["high"]))
        }
        registry.register("cap") { parameters throws(PolicyError) in
            try parameters.allowOnly(["count", "days", "hours"])
            guard let window = try parameters.duration() else {
                throw PolicyError(.invalidPolicy, "\(parameters.node.location): cap needs a window: days or hours")
            }
            return CapRule(count: try parameters.integer("count", minimum: 1), window: window)
        }
        registry.register("cool-down") { parameters throws(PolicyError) in
            try parameters.allowOnly(["days", "hours", "sameOfferOnly"])
            guard let window = try parameters.duration() else {
                throw PolicyError(.invalidPolicy, "\(parameters.node.location): cool-down needs days or hours")
            }
            let sameOffer = try parameters.string("sameOfferOnly").map { $0 == "true" } ?? false
            return CoolDownRule(window: window, sameOfferOnly: sameOffer)
        }
        registry.register("active-window") { parameters throws(PolicyError) in
            try parameters.allowOnly(["from", "until"])
            let from = try parameters.date("from")
            let until = try parameters.date("until")
            guard from != nil || until != nil else {
                throw PolicyError(.invalidPolicy, "\(parameters.node.location): active-window needs from, until or both")
            }
            if let from, let until, until <= from {
                throw PolicyError(
                    .invalidPolicy,
                    "\(parameters.node.location): active-window's until is not after its from, so the offer is never active; fix the dates"
                )
            }
            return ActiveWindowRule(from: from, until: until)
        }
        registry.register("storefront") { parameters throws(PolicyError) in
            try parameters.allowOnly(["allow", "deny"])
            // The App Store's storefront codes are ISO 3166-1 alpha-3 in upper case (`USA`), exactly as a transaction's
            // `storefront` carries them: anything else would never match.
            for code in (try parameters.strings("allow") ?? []) + (try parameters.strings("deny") ?? []) {
                guard code.utf8.count == 3, code.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
                    throw PolicyError(
                        .invalidPolicy,
                        """
                        \(parameters.node.location): storefront codes are the App Store's upper-case ISO 3166-1 alpha-3 codes such as USA or \
                        GBR, not '\(code.prefix(20))'
                        """
                    )
                }
            }
            let allow = try parameters.strings("allow").map { Set($0) }
            let deny = Set(try parameters.strings("deny") ?? [])
            guard allow != nil || !deny.isEmpty else {
                throw PolicyError(.invalidPolicy, "\(parameters.node.location): storefront needs allow, deny or both")
            }
            return StorefrontRule(allow: allow, deny: deny)
        }
        registry.register("customers") { parameters throws(PolicyError) in
            try parameters.allowOnly(["allow", "deny"])
            let allow = try parameters.strings("allow").map { Set($0.map { $0.lowercased() }) }
            let deny = Set((try parameters.strings("deny") ?? []).map { $0.lowercased() })
            guard allow != nil || !deny.isEmpty else {
                throw PolicyError(.invalidPolicy, "\(parameters.node.location): customers needs allow, deny or both")
            }
            return CustomerListRule(allow: allow, deny: deny)
        }
        registry.register("never-had-introductory-offer") { parameters throws(PolicyError) in
            try parameters.allowOnly([])
            return NeverHadIntroductoryOfferRule()
        }
        return registry
    }()
}
