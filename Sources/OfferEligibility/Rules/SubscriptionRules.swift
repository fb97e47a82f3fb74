import Foundation
import OfferModel

/// The App Store's own rule: a promotional offer is for customers who have, or had, an auto-renewable
/// subscription in the app. (`app-store-subscriber`)
public struct HasOrHadSubscriptionRule: EligibilityRule {
    public let name = "app-store-subscriber"
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        require(
            !context.facts.subscriptions.isEmpty,
            "never_subscribed",
            "Promotional offers are for customers who have or had a subscription in the app; none is known for this customer."
        )
    }
}

/// Subscribed now (`active` or in the billing grace period). (`active-subscriber`)
public struct ActiveSubscriberRule: EligibilityRule {
    public let name = "active-subscriber"
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let state = context.subscription?.state
        return require(
            state == .active || state == .inGracePeriod,
            "not_active_subscriber",
            "The customer has no active subscription in this group (state: \(state?.rawValue ?? "none"))."
        )
    }
}

/// Win-back: the subscription expired between `minDays` and `maxDays` days ago. (`lapsed`)
public struct LapsedRule: EligibilityRule {
    public let name = "lapsed"
    public let minimumDays: Int
    public let maximumDays: Int?

    public init(minimumDays: Int, maximumDays: Int?) {
        self.minimumDays = minimumDays
        self.maximumDays = maximumDays
    }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        guard let subscription = context.subscription, subscription.state == .expired || subscription.state == .revoked else {
            return .notEligible([
                reason("not_lapsed", "The customer's subscription has not lapsed (state: \(context.subscription?.state.rawValue ?? "none")).")
            ])
        }
        guard let expires = subscription.expiresDate else {
            return .notEligible([reason("expiry_unknown", "When the customer's subscription expired is not known.")])
        }
        let days = Int(context.now.timeIntervalSince(expires) / 86_400)
        if days < minimumDays {
            return .notEligible([reason("lapsed_too_recently", "The subscription lapsed \(days) days ago; this offer starts at \(minimumDays).")])
        }
        if let maximumDays, days > maximumDays {
            return .notEligible([reason("lapsed_too_long_ago", "The subscription lapsed \(days) days ago; this offer ends at \(maximumDays).")])
        }
        return .eligible()
    }
}

/// Retention: still subscribed, auto-renew turned off. (`auto-renew-off`)
public struct AutoRenewOffRule: EligibilityRule {
    public let name = "auto-renew-off"
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        guard let subscription = context.subscription, subscription.state == .active || subscription.state == .inGracePeriod else {
            return .notEligible([reason("not_active_subscriber", "Retention offers are for active subscribers.")])
        }
        return require(!subscription.autoRenewEnabled, "auto_renew_on", "The customer's subscription will renew; auto-renew is on.")
    }
}

/// In billing retry or the grace period. (`billing-issue`)
public struct BillingIssueRule: EligibilityRule {
    public let name = "billing-issue"
    /// `billing-retry`, `grace-period`.
    public let states: Set<String>

    public init(states: Set<String>) { self.states = states }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let state = context.subscription?.state
        let matches = (state == .inBillingRetry && states.contains("billing-retry")) || (state == .inGracePeriod && states.contains("grace-period"))
        return require(
            matches,
            "no_billing_issue",
            "The customer's subscription is not in \(states.sorted().joined(separator: " or ")) (state: \(state?.rawValue ?? "none"))."
        )
    }
}

/// Downgraded to a lower tier (upgrade offer). (`downgraded`)
public struct DowngradedRule: EligibilityRule {
    public let name = "downgraded"
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        require(context.subscription?.downgraded == true, "not_downgraded", "The customer has not downgraded their subscription.")
    }
}

/// Loyalty: at least `minRenewals` renewals. (`loyalty`)
public struct LoyaltyRule: EligibilityRule {
    public let name = "loyalty"
    public let minimumRenewals: Int

    public init(minimumRenewals: Int) { self.minimumRenewals = minimumRenewals }

    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let renewals = context.subscription?.renewalCount ?? 0
        return require(
            renewals >= minimumRenewals,
            "not_loyal_enough",
            "The customer has renewed \(renewals) time\(renewals == 1 ? "" : "s"); this offer needs \(minimumRenewals)."
        )
    }
}

/// Introductory-offer policy: never had an introductory offer in the product's subscription group.
/// (`never-had-introductory-offer`)
public struct NeverHadIntroductoryOfferRule: EligibilityRule {
    public let name = "never-had-introductory-offer"
    public init() {}
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        require(
            context.subscription?.hadIntroductoryOffer != true,
            "had_introductory_offer",
            "The customer already had an introductory offer in this subscription group."
        )
    }
}
