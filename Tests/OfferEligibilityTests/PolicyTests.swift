import Foundation
import OfferEligibility
import OfferModel
import Testing

/// The policy of the issue's acceptance: a win-back, a retention, a loyalty and a customer-service offer.
let samplePolicy = """
    apps:
      - bundleIdentifier: com.example.app
        issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
        products:
          - productIdentifier: com.example.monthly
            subscriptionGroupIdentifier: "21000001"
            introductoryOffer:
              rules:
                - never-had-introductory-offer
            offers:
              - offerIdentifier: winback_50
                description: 50% off for three months, for customers who left 30 to 365 days ago
                rules:
                  - app-store-subscriber
                  - lapsed: { minDays: 30, maxDays: 365 }
                  - cap: { count: 2, days: 30 }
              - offerIdentifier: retention_30
                rules:
                  - any:
                      - auto-renew-off
                      - churn-risk: { values: [high, medium] }
                  - cool-down: { days: 7 }
              - offerIdentifier: loyalty_free_month
                rules:
                  - active-subscriber
                  - loyalty: { minRenewals: 12 }
              - offerIdentifier: sorry_free_month
                rules:
                  - customer-service-grant
    """

@Suite struct PolicyTests {
    let policy = try! OfferPolicy(text: samplePolicy)
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    private func facts(_ subscription: SubscriptionFacts? = nil, flags: [String: String] = [:], grants: [CustomerServiceGrant] = []) -> CustomerFacts
    {
        CustomerFacts(
            key: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "user-1"),
            subscriptions: subscription.map { [$0] } ?? [],
            flags: flags,
            grants: grants
        )
    }

    private func subscription(
        _ state: SubscriptionState,
        autoRenew: Bool = true,
        expiredDaysAgo: Double? = nil,
        renewals: Int = 0
    ) -> SubscriptionFacts {
        SubscriptionFacts(
            subscriptionGroupIdentifier: "21000001",
            productIdentifier: "com.example.monthly",
            state: state,
            autoRenewEnabled: autoRenew,
            expiresDate: expiredDaysAgo.map { now.addingTimeInterval(-$0 * 86_400) } ?? now.addingTimeInterval(86_400),
            renewalCount: renewals
        )
    }

    private func decide(_ offer: String, _ facts: CustomerFacts, issued: [IssuedSignature] = []) throws -> EligibilityDecision {
        guard
            case .found(_, let product, let found) = policy.lookup(
                bundleIdentifier: "com.example.app",
                productIdentifier: "com.example.monthly",
                offerIdentifier: offer
            )
        else {
            Issue.record("offer \(offer) not found")
            return .notEligible([])
        }
        let context = EligibilityContext(
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: offer,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier,
            facts: facts,
            issuedSignatures: issued,
            now: now
        )
        return found.rule.evaluate(context)
    }

    private func issued(_ offer: String, hoursAgo: Double) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "K",
            bundleIdentifier: "com.example.app",
            productIdentifier: "com.example.monthly",
            offerIdentifier: offer,
            applicationUsername: "user-1",
            timestamp: Int64((now.timeIntervalSince1970 - hoursAgo * 3_600) * 1000),
            format: "legacy"
        )
    }

    @Test func winBackIsForCustomersWhoLapsedWithinTheWindow() throws {
        #expect(try decide("winback_50", facts(subscription(.expired, expiredDaysAgo: 45))).isEligible)
        #expect(try decide("winback_50", facts(subscription(.expired, expiredDaysAgo: 10))).reasons.map(\.code) == ["lapsed_too_recently"])
        #expect(try decide("winback_50", facts(subscription(.expired, expiredDaysAgo: 400))).reasons.map(\.code) == ["lapsed_too_long_ago"])
        #expect(try decide("winback_50", facts(subscription(.active))).reasons.map(\.code) == ["not_lapsed"])
        let stranger = try decide("winback_50", facts())
        #expect(stranger.reasons.map(\.code) == ["never_subscribed", "not_lapsed"])
        #expect(stranger.reasons.map(\.rule) == ["app-store-subscriber", "lapsed"])
    }

    @Test func theCapCountsThisOffersSignaturesInItsWindow() throws {
        let lapsed = facts(subscription(.expired, expiredDaysAgo: 45))
        #expect(try decide("winback_50", lapsed, issued: [issued("winback_50", hoursAgo: 1)]).isEligible)
        let twice = [issued("winback_50", hoursAgo: 1), issued("winback_50", hoursAgo: 24 * 20)]
        let capped = try decide("winback_50", lapsed, issued: twice)
        #expect(capped.reasons.map(\.code) == ["cap_reached"])
        #expect(capped.reasons.first?.message.contains("2 times") == true)
        let old = [issued("winback_50", hoursAgo: 1), issued("winback_50", hoursAgo: 24 * 31)]
        #expect(try decide("winback_50", lapsed, issued: old).isEligible)
        let otherOffer = [issued("retention_30", hoursAgo: 1), issued("retention_30", hoursAgo: 2)]
        #expect(try decide("winback_50", lapsed, issued: otherOffer).isEligible)
        #expect(policy.lookback == 30 * 86_400)
    }

    @Test func retentionIsForAutoRenewOffOrChurnRiskWithACoolDown() throws {
        #expect(try decide("retention_30", facts(subscription(.active, autoRenew: false))).isEligible)
        #expect(try decide("retention_30", facts(subscription(.active), flags: ["churnRisk": "medium"])).isEligible)
        let neither = try decide("retention_30", facts(subscription(.active), flags: ["churnRisk": "low"]))
        #expect(Set(neither.reasons.map(\.code)) == ["auto_renew_on", "not_churn_risk"])
        let coolingDown = try decide("retention_30", facts(subscription(.active, autoRenew: false)), issued: [issued("winback_50", hoursAgo: 24)])
        #expect(coolingDown.reasons.map(\.code) == ["cooling_down"])
        #expect(
            try decide("retention_30", facts(subscription(.active, autoRenew: false)), issued: [issued("winback_50", hoursAgo: 24 * 8)]).isEligible
        )
    }

    @Test func loyaltyNeedsAnActiveSubscriberWithEnoughRenewals() throws {
        #expect(try decide("loyalty_free_month", facts(subscription(.active, renewals: 12))).isEligible)
        #expect(try decide("loyalty_free_month", facts(subscription(.active, renewals: 11))).reasons.map(\.code) == ["not_loyal_enough"])
        #expect(
            try decide("loyalty_free_month", facts(subscription(.expired, expiredDaysAgo: 3, renewals: 30))).reasons.map(\.code) == [
                "not_active_subscriber"
            ]
        )
    }

    @Test func aCustomerServiceGrantIsUsableOnceAndExpires() throws {
        let grant = CustomerServiceGrant(
            productIdentifier: "com.example.monthly",
            offerIdentifier: "sorry_free_month",
            grantedBy: "alice",
            grantedAt: now,
            expiresAt: now.addingTimeInterval(86_400)
        )
        let decision = try decide("sorry_free_month", facts(subscription(.active), grants: [grant]))
        #expect(decision.grant == grant.id)
        var used = grant
        used.usedAt = now
        #expect(try decide("sorry_free_month", facts(subscription(.active), grants: [used])).reasons.map(\.code) == ["no_grant"])
        var expired = grant
        expired.expiresAt = now.addingTimeInterval(-1)
        #expect(try decide("sorry_free_month", facts(subscription(.active), grants: [expired])).reasons.map(\.code) == ["no_grant"])
        var otherOffer = grant
        otherOffer.offerIdentifier = "winback_50"
        #expect(!(try decide("sorry_free_month", facts(subscription(.active), grants: [otherOffer])).isEligible))
    }

    @Test func lookupsTellUnknownAppProductAndOfferApart() {
        if case .unknownApp = policy.lookup(bundleIdentifier: "com.other", productIdentifier: "p", offerIdentifier: "o") {
        } else {
            Issue.record("unknown app")
        }
        if case .unknownProduct = policy.lookup(bundleIdentifier: "com.example.app", productIdentifier: "p", offerIdentifier: "o") {
        } else {
            Issue.record("unknown product")
        }
        if case .unknownOffer = policy.lookup(bundleIdentifier: "com.example.app", productIdentifier: "com.example.monthly", offerIdentifier: "o") {
        } else {
            Issue.record("unknown offer")
        }
        #expect(policy.app("com.example.app")?.issuerIdentifier == "57246542-96fe-1a63-e053-0824d011072a")
    }

    @Test func theIntroductoryOfferPolicyReadsTheSubscriptionGroup() throws {
        let rule = try #require(policy.app("com.example.app")?.product("com.example.monthly")?.introductoryOffer)
        var had = subscription(.expired, expiredDaysAgo: 100)
        had.hadIntroductoryOffer = true
        let context = { (facts: CustomerFacts) in
            EligibilityContext(
                bundleIdentifier: "com.example.app",
                productIdentifier: "com.example.monthly",
                offerIdentifier: "",
                subscriptionGroupIdentifier: "21000001",
                facts: facts,
                now: self.now
            )
        }
        #expect(rule.evaluate(context(facts())).isEligible)
        #expect(rule.evaluate(context(facts(had))).reasons.map(\.code) == ["had_introductory_offer"])
    }

    @Test("a retention selection's yes carries the entry it chose, so the flow acts on that decision")
    func retentionSelectionCarriesItsChoice() throws {
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: com.example.app
                    products:
                      - productIdentifier: p
                        subscriptionGroupIdentifier: "21000001"
                        retention:
                          - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01
                            rules: [{ loyalty: { minRenewals: 5 } }]
                          - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02
                            rules: [active-subscriber]
                """
        )
        let entries = try #require(policy.app("com.example.app")?.product("p")?.retention)
        let selection = RetentionSelection(entries)
        let context = { (facts: CustomerFacts) in
            EligibilityContext(
                bundleIdentifier: "com.example.app",
                productIdentifier: "p",
                offerIdentifier: "",
                subscriptionGroupIdentifier: "21000001",
                facts: facts,
                now: self.now
            )
        }
        let active = selection.evaluate(context(facts(subscription(.active))))
        #expect(active.isEligible && active.choice == 1, "the second entry holds: the first needs five renewals")
        #expect(OfferPolicy.chooseRetention(entries, in: context(facts(subscription(.active)))).index == active.choice)
        let lapsed = selection.evaluate(context(facts(subscription(.expired, expiredDaysAgo: 3))))
        #expect(!lapsed.isEligible && lapsed.choice == nil && !lapsed.reasons.isEmpty)
    }

    @Test func theSamePolicyReadsFromJSON() throws {
        let json =
            #"""
            {"apps":[{"bundleIdentifier":"com.example.app","products":[{"productIdentifier":"p","offers":[{"offerIdentifier":"o",\#
            "rules":[{"loyalty":{"minRenewals":3}},{"not":{"storefront":{"allow":["USA"]}}}]}]}]}]}
            """#
        let policy = try OfferPolicy(text: json)
        guard case .found(_, _, let offer) = policy.lookup(bundleIdentifier: "com.example.app", productIdentifier: "p", offerIdentifier: "o") else {
            Issue.record("not found")
            return
        }
        #expect(offer.rule.rules.map(\.name) == ["loyalty", "not"])
    }
}
