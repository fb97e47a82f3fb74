import Foundation
import OfferModel

/// What a rule sees: the request, and what the store knows of the customer.
public struct EligibilityContext: Sendable {
    /// The app.
    public var bundleIdentifier: String
    /// The product of the offer.
    public var productIdentifier: String
    /// The offer asked for (empty when deciding introductory-offer eligibility).
    public var offerIdentifier: String
    /// The product's subscription group, from the catalogue.
    public var subscriptionGroupIdentifier: String?
    /// The customer's facts (empty facts when the store has never heard of them).
    public var facts: CustomerFacts
    /// This customer's issued signatures in this app, newest first, as far back as the policy's longest window.
    public var issuedSignatures: [IssuedSignature]
    /// The time of the decision.
    public var now: Date
    /// Variants already assigned, by experiment `id` (a dry-run replaying the decision log, which keeps the variant
    /// each decision got): an experiment's gate takes the variant named here instead of hashing the customer.
    public var assignedVariants: [String: String] = [:]

    public init(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        subscriptionGroupIdentifier: String? = nil,
        facts: CustomerFacts,
        issuedSignatures: [IssuedSignature] = [],
        now: Date = Date()
    ) {
        self.bundleIdentifier = bundleIdentifier
        self.productIdentifier = productIdentifier
        self.offerIdentifier = offerIdentifier
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.facts = facts
        self.issuedSignatures = issuedSignatures
        self.now = now
    }

    /// The customer's signatures issued less than `window` seconds before ``now``, newest first; only those of
    /// this offer when `sameOfferOnly`.
    public func issuedSignatures(within window: TimeInterval, sameOfferOnly: Bool) -> [IssuedSignature] {
        let since = Int64((now.timeIntervalSince1970 - window) * 1000)
        return issuedSignatures.filter {
            $0.timestamp >= since && (!sameOfferOnly || ($0.productIdentifier == productIdentifier && $0.offerIdentifier == offerIdentifier))
        }
    }

    /// The customer's subscription in the offer's group (by group, else by product).
    public var subscription: SubscriptionFacts? {
        if let group = subscriptionGroupIdentifier, let facts = facts.subscription(inGroup: group) { return facts }
        return facts.subscription(forProduct: productIdentifier)
    }
}

/// A duration for people: "30 days", "36 hours", "12 minutes".
/// - Parameter roundingUp: a wait: the largest unit that fits, rounded up ("try again in 2 days"); otherwise
///   a window: the largest unit that divides it exactly ("36 hours", not "1 day").
public func describeDuration(_ seconds: TimeInterval, roundingUp: Bool = false) -> String {
    let units: [(TimeInterval, String)] = [(86_400, "day"), (3_600, "hour"), (60, "minute")]
    guard seconds.isFinite, seconds < 1e15 else { return "a very long time" }
    for (size, name) in units where seconds >= size && (roundingUp || seconds.truncatingRemainder(dividingBy: size) == 0) {
        let count = Int((seconds / size).rounded(.up))
        return "\(count) \(name)\(count == 1 ? "" : "s")"
    }
    let minutes = max(1, Int((seconds / 60).rounded(.up)))
    return "\(minutes) minute\(minutes == 1 ? "" : "s")"
}

/// Why a customer may not have an offer, in words an app or a support person can use.
public struct EligibilityReason: Sendable, Hashable, Codable {
    /// The rule that said no (its name in the policy file).
    public var rule: String
    /// A stable code (`not_lapsed_long_enough`, `cap_reached`, …).
    public var code: String
    /// A sentence for humans.
    public var message: String

    public init(rule: String, code: String, message: String) {
        self.rule = rule
        self.code = code
        self.message = message
    }
}

/// A rule's answer.
public enum EligibilityDecision: Sendable, Hashable {
    /// Yes. `grant` names a customer-service grant the signature will use up; `choice`, for a rule that chooses among
    /// alternatives (``RetentionSelection``: which retention entry), the one it chose, so that the flow acts on the
    /// decision made once instead of deciding again.
    case eligible(grant: String? = nil, choice: Int? = nil)
    /// No, with every reason.
    case notEligible([EligibilityReason])

    /// Whether the answer is yes.
    public var isEligible: Bool {
        if case .eligible = self { return true }
        return false
    }

    /// The reasons of a no (empty for a yes).
    public var reasons: [EligibilityReason] {
        if case .notEligible(let reasons) = self { return reasons }
        return []
    }

    /// What a choosing rule chose, for a yes.
    public var choice: Int? {
        if case .eligible(_, let choice) = self { return choice }
        return nil
    }

    /// The grant a yes uses, if any.
    public var grant: String? {
        if case .eligible(let grant, _) = self { return grant }
        return nil
    }
}

/// An eligibility rule: a pure function of the request and what is known of the customer.
///
/// ## Usage
///
/// A rule of your own, in a few lines, usable from the policy file once registered:
///
/// ```swift
/// struct BetaTesters: EligibilityRule {
///     let name = "beta-testers"
///     func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
///         context.facts.flags["beta"] == "yes" ? .eligible()
///             : .notEligible([reason("not_beta", "Only beta testers get this offer.")])
///     }
/// }
/// var registry = RuleRegistry.builtIn
/// registry.register("beta-testers") { _ in BetaTesters() }
/// let policy = try OfferPolicy(yaml: text, registry: registry)
/// ```
public protocol EligibilityRule: Sendable {
    /// The rule's name, as written in the policy file; reasons carry it.
    var name: String { get }
    /// How far back this rule looks at issued signatures (for caps and cool-downs); `nil` when it does not.
    var lookback: TimeInterval? { get }
    /// Whether the decision depends on what signing itself changes — issued signatures (caps, cool-downs) or
    /// customer-service grants — so that deciding and recording must be one atomic step per customer.
    /// Default: `lookback != nil`.
    var dependsOnIssuedOffers: Bool { get }
    /// Decides.
    func evaluate(_ context: EligibilityContext) -> EligibilityDecision
}

extension EligibilityRule {
    public var lookback: TimeInterval? { nil }
    public var dependsOnIssuedOffers: Bool { lookback != nil }

    /// A reason from this rule.
    public func reason(_ code: String, _ message: String) -> EligibilityReason {
        EligibilityReason(rule: name, code: code, message: message)
    }

    /// `.eligible()` when `condition` holds, else a no with this reason.
    public func require(_ condition: Bool, _ code: String, _ message: @autoclosure () -> String) -> EligibilityDecision {
        condition ? .eligible() : .notEligible([reason(code, message())])
    }
}
