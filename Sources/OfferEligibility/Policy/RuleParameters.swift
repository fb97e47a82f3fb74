import Foundation

/// The parameters of one rule in the policy file, with typed getters whose errors point at the place.
public struct RuleParameters: Sendable {
    /// The rule's node (`{lapsed: {minDays: 30}}`'s value).
    public let node: PolicyNode
    /// The rule's name.
    public let ruleName: String
    /// The registry, for combinators that build nested rules.
    public let registry: RuleRegistry

    /// Refuses parameters outside `allowed`.
    public func allowOnly(_ allowed: Set<String>) throws(PolicyError) {
        if case .null = node.value { return }
        try node.requireOnlyKeys(allowed)
    }

    /// A required or optional integer between `minimum` and `maximum` (bounded, so that no policy value can
    /// overflow the date arithmetic of the rules).
    public func integer(_ key: String, default defaultValue: Int? = nil, minimum: Int = 0, maximum: Int = 1_000_000) throws(PolicyError) -> Int {
        guard let value = node[key] else {
            guard let defaultValue else { throw PolicyError(.invalidPolicy, "\(node.location): rule \(ruleName) needs '\(key)' (an integer)") }
            return defaultValue
        }
        guard let number = Int(try value.string()), (minimum...maximum).contains(number) else {
            throw PolicyError(.invalidPolicy, "\(value.location): '\(key)' of rule \(ruleName) must be an integer from \(minimum) to \(maximum)")
        }
        return number
    }

    /// An optional integer.
    public func optionalInteger(_ key: String, minimum: Int = 0, maximum: Int = 1_000_000) throws(PolicyError) -> Int? {
        node[key] == nil ? nil : try integer(key, minimum: minimum, maximum: maximum)
    }

    /// An optional number of hours/days given as `hours` or `days`, in seconds; at most 100 years.
    public func duration(hoursKey: String = "hours", daysKey: String = "days") throws(PolicyError) -> TimeInterval? {
        if node[daysKey] != nil { return TimeInterval(try integer(daysKey, minimum: 1, maximum: 36_500)) * 86_400 }
        if node[hoursKey] != nil { return TimeInterval(try integer(hoursKey, minimum: 1, maximum: 876_000)) * 3_600 }
        return nil
    }

    /// An optional string.
    public func string(_ key: String) throws(PolicyError) -> String? {
        try node[key].map { node throws(PolicyError) in try node.string() }
    }

    /// A list of strings (a single string counts as a list of one).
    public func strings(_ key: String) throws(PolicyError) -> [String]? {
        guard let value = node[key] else { return nil }
        if case .scalar(let one) = value.value { return [one] }
        var strings: [String] = []
        for item in try value.list() { strings.append(try item.string()) }
        return strings
    }

    /// An optional ISO 8601 date.
    public func date(_ key: String) throws(PolicyError) -> Date? {
        guard let value = node[key] else { return nil }
        let text = try value.string()
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return date }
        throw PolicyError(
            .invalidPolicy,
            "\(value.location): '\(key)' of rule \(ruleName) must be an ISO 8601 date (2026-12-01 or 2026-12-01T00:00:00Z)"
        )
    }

    /// Nested rules (for combinators): a list of rules, or one rule.
    public func nestedRules() throws(PolicyError) -> [any EligibilityRule] {
        switch node.value {
        case .list(let items):
            var rules: [any EligibilityRule] = []
            for item in items { rules.append(try registry.rule(from: item)) }
            return rules
        case .map:
            return [try registry.rule(from: node)]
        default:
            throw PolicyError(.invalidPolicy, "\(node.location): \(ruleName) takes a list of rules")
        }
    }
}
