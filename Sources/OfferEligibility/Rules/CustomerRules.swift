import Foundation
import OfferModel

/// A customer-service grant for this offer, unexpired and unused. The signature it allows uses it up.
/// (`customer-service-grant`)
public struct CustomerServiceGrantRule: EligibilityRule {
    public let name = "customer-service-grant"
    /// A grant is used up by the signature it allows: two requests must not both spend it.
    public var dependsOnIssuedOffers: Bool { true }
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let grant = context.facts.grants.first {
            $0.productIdentifier == context.productIdentifier && $0.offerIdentifier == context.offerIdentifier && $0.isUsable(at: context.now)
        }
        guard let grant else {
            return .notEligible([reason("no_grant", "No unused, unexpired customer-service grant for this offer.")])
        }
        return .eligible(grant: grant.id)
    }
}

/// Save offer: the developer's backend flagged the customer as a churn risk. (`churn-risk`)
public struct ChurnRiskRule: EligibilityRule {
    public let name = "churn-risk"
    public let flag: String
    public let values: Set<String>

    public init(flag: String, values: Set<String>) {
        self.flag = flag
        self.values = values
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let value = context.facts.flags[flag]
        return require(
            value.map(values.contains) ?? false,
            "not_churn_risk",
            "The customer's \(flag) flag is \(value ?? "not set"); this offer needs \(values.sorted().joined(separator: " or "))."
        )
    }
}

/// At most `count` signatures of this offer per customer per window. (`cap`)
public struct CapRule: EligibilityRule {
    public let name = "cap"
    public let count: Int
    public let window: TimeInterval

    public init(count: Int, window: TimeInterval) {
        self.count = count
        self.window = window
    }

    public var lookback: TimeInterval? { window }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let issued = context.issuedSignatures(within: window, sameOfferOnly: true).count
        return require(
            issued < count,
            "cap_reached",
            """
            This offer was signed \(issued == 1 ? "once" : "\(issued) times") for this customer in the last \
            \(describeDuration(window)); the cap is \(count).
            """
        )
    }
}

/// A pause between offers: none signed for this customer (any offer, or this one) in the window.
/// (`cool-down`)
public struct CoolDownRule: EligibilityRule {
    public let name = "cool-down"
    public let window: TimeInterval
    public let sameOfferOnly: Bool

    public init(window: TimeInterval, sameOfferOnly: Bool) {
        self.window = window
        self.sameOfferOnly = sameOfferOnly
    }

    public var lookback: TimeInterval? { window }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        guard let last = context.issuedSignatures(within: window, sameOfferOnly: sameOfferOnly).first else { return .eligible() }
        let wait = Double(last.timestamp) / 1000 + window - context.now.timeIntervalSince1970
        return .notEligible([
            reason(
                "cooling_down",
                """
                An offer was signed for this customer less than \(describeDuration(window)) ago; try again in \
                \(describeDuration(max(wait, 60), roundingUp: true)).
                """
            )
        ])
    }
}

/// The offer runs only between `from` and `until`. (`active-window`)
public struct ActiveWindowRule: EligibilityRule {
    public let name = "active-window"
    public let from: Date?
    public let until: Date?

    public init(from: Date?, until: Date?) {
        self.from = from
        self.until = until
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let formatter = ISO8601DateFormatter()
        if let from, context.now < from {
            return .notEligible([reason("offer_not_started", "This offer starts at \(formatter.string(from: from)).")])
        }
        if let until, context.now >= until {
            return .notEligible([reason("offer_ended", "This offer ended at \(formatter.string(from: until)).")])
        }
        return .eligible()
    }
}

/// An allow list (when given) and a deny list of values, and the reasons a rule gives when a value is refused.
public struct AllowDenyList: Sendable {
    /// Values allowed; `nil` allows every value not denied.
    public let allow: Set<String>?
    /// Values refused, whatever the allow list says.
    public let deny: Set<String>

    public init(allow: Set<String>?, deny: Set<String>) {
        self.allow = allow
        self.deny = deny
    }

    /// The decision for `value`: denied, not allowed, or eligible.
    func evaluate(
        _ value: String,
        denied: @autoclosure () -> EligibilityReason,
        notAllowed: @autoclosure () -> EligibilityReason
    ) -> EligibilityDecision {
        if deny.contains(value) { return .notEligible([denied()]) }
        if let allow, !allow.contains(value) { return .notEligible([notAllowed()]) }
        return .eligible()
    }
}

/// Storefront allow and deny lists (ISO 3166-1 alpha-3 codes, e.g. `USA`). (`storefront`)
public struct StorefrontRule: EligibilityRule {
    public let name = "storefront"
    public let list: AllowDenyList
    public var allow: Set<String>? { list.allow }
    public var deny: Set<String> { list.deny }

    public init(allow: Set<String>?, deny: Set<String>) {
        list = AllowDenyList(allow: allow, deny: deny)
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        guard let storefront = context.facts.storefront?.uppercased() else {
            return allow == nil
                ? .eligible()
                : .notEligible([reason("storefront_unknown", "This offer is limited to some storefronts and the customer's is not known.")])
        }
        return list.evaluate(
            storefront,
            denied: reason("storefront_denied", "This offer is not available in storefront \(storefront)."),
            notAllowed: reason("storefront_not_allowed", "This offer is not available in storefront \(storefront).")
        )
    }
}

/// Customer allow and deny lists (applicationUsername, compared lower-cased). (`customers`)
public struct CustomerListRule: EligibilityRule {
    public let name = "customers"
    public let list: AllowDenyList
    public var allow: Set<String>? { list.allow }
    public var deny: Set<String> { list.deny }

    public init(allow: Set<String>?, deny: Set<String>) {
        list = AllowDenyList(allow: allow, deny: deny)
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        list.evaluate(
            context.facts.key.applicationUsername,
            denied: reason("customer_denied", "This customer is on the offer's deny list."),
            notAllowed: reason("customer_not_allowed", "This customer is not on the offer's allow list.")
        )
    }
}
