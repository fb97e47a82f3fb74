import Foundation
import OfferEligibility
import OfferModel
import Testing

@Suite struct BuiltInRuleTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func context(
        state: SubscriptionState? = nil,
        downgraded: Bool = false,
        storefront: String? = nil,
        username: String = "user-1"
    ) -> EligibilityContext {
        let subscriptions =
            state.map { [SubscriptionFacts(subscriptionGroupIdentifier: "g", productIdentifier: "p", state: $0, downgraded: downgraded)] } ?? []
        return EligibilityContext(
            bundleIdentifier: "a",
            productIdentifier: "p",
            offerIdentifier: "o",
            subscriptionGroupIdentifier: "g",
            facts: CustomerFacts(
                key: CustomerKey(bundleIdentifier: "a", applicationUsername: username),
                subscriptions: subscriptions,
                storefront: storefront
            ),
            now: now
        )
    }

    @Test(
        "billing-issue follows billing retry and grace period",
        arguments: [
            (SubscriptionState.inBillingRetry, true), (.inGracePeriod, true), (.active, false), (.expired, false),
        ]
    )
    func billingIssue(_ state: SubscriptionState, _ eligible: Bool) {
        #expect(BillingIssueRule(states: ["billing-retry", "grace-period"]).evaluate(context(state: state)).isEligible == eligible)
    }

    @Test func billingIssueCanBeNarrowedToGracePeriod() {
        #expect(!BillingIssueRule(states: ["grace-period"]).evaluate(context(state: .inBillingRetry)).isEligible)
    }

    @Test func downgradedIsForCustomersWhoMovedDown() {
        #expect(DowngradedRule().evaluate(context(state: .active, downgraded: true)).isEligible)
        #expect(DowngradedRule().evaluate(context(state: .active)).reasons.map(\.code) == ["not_downgraded"])
    }

    @Test func activeWindow() {
        #expect(ActiveWindowRule(from: now.addingTimeInterval(-1), until: now.addingTimeInterval(1)).evaluate(context()).isEligible)
        #expect(ActiveWindowRule(from: now.addingTimeInterval(1), until: nil).evaluate(context()).reasons.map(\.code) == ["offer_not_started"])
        #expect(ActiveWindowRule(from: nil, until: now).evaluate(context()).reasons.map(\.code) == ["offer_ended"])
    }

    @Test func storefrontAllowAndDeny() {
        let allowUS = StorefrontRule(allow: ["USA"], deny: [])
        #expect(allowUS.evaluate(context(storefront: "usa")).isEligible)
        #expect(allowUS.evaluate(context(storefront: "FRA")).reasons.map(\.code) == ["storefront_not_allowed"])
        #expect(allowUS.evaluate(context()).reasons.map(\.code) == ["storefront_unknown"])
        let denyFR = StorefrontRule(allow: nil, deny: ["FRA"])
        #expect(denyFR.evaluate(context(storefront: "FRA")).reasons.map(\.code) == ["storefront_denied"])
        #expect(denyFR.evaluate(context()).isEligible)
    }

    @Test func customerAllowAndDenyLists() {
        #expect(CustomerListRule(allow: ["user-1"], deny: []).evaluate(context(username: "USER-1")).isEligible)
        #expect(!CustomerListRule(allow: ["user-2"], deny: []).evaluate(context()).isEligible)
        #expect(CustomerListRule(allow: nil, deny: ["user-1"]).evaluate(context()).reasons.map(\.code) == ["customer_denied"])
    }

    @Test func combinators() {
        let yes = ActiveSubscriberRule()
        let no = DowngradedRule()
        let active = context(state: .active)
        #expect(AllRules([yes, yes]).evaluate(active).isEligible)
        #expect(AllRules([yes, no]).evaluate(active).reasons.map(\.code) == ["not_downgraded"])
        #expect(AnyRule([no, yes]).evaluate(active).isEligible)
        #expect(AnyRule([no, no]).evaluate(active).reasons.count == 2)
        #expect(NotRule(no).evaluate(active).isEligible)
        #expect(NotRule(yes).evaluate(active).reasons.map(\.code) == ["excluded_by_active_subscriber"])
        #expect(AllRules([]).evaluate(active).isEligible)
    }

    @Test func theAppStoresOwnRule() {
        #expect(HasOrHadSubscriptionRule().evaluate(context(state: .expired)).isEligible)
        #expect(HasOrHadSubscriptionRule().evaluate(context()).reasons.map(\.code) == ["never_subscribed"])
    }
}
