import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferStore
import Testing

/// The notification sequence of the issue — subscribe, renew, turn auto-renew off, expire — folded into a
/// customer's facts, and what the policy's retention and win-back offers say at each step.
@Suite struct SubscriptionFoldingTests {
    static let token = "8c1d6a9e-0b2f-4c3d-9e8f-1a2b3c4d5e6f"
    static let policy = try! OfferPolicy(
        text: """
            apps:
              - bundleIdentifier: \(TestPayloads.bundleIdentifier)
                products:
                  - productIdentifier: \(TestPayloads.productIdentifier)
                    subscriptionGroupIdentifier: "21000001"
                    offers:
                      - offerIdentifier: retention_30
                        rules: [auto-renew-off]
                      - offerIdentifier: winback_50
                        rules: [app-store-subscriber, { lapsed: { minDays: 0, maxDays: 365 } }]
                      - offerIdentifier: loyalty
                        rules: [active-subscriber, { loyalty: { minRenewals: 1 } }]
            """
    )

    private func notification(
        _ type: NotificationType,
        _ subtype: NotificationSubtype? = nil,
        expires: Date,
        signedDate: Date,
        status: SubscriptionStatus? = nil,
        autoRenew: AutoRenewStatus = .on
    ) -> DecodedNotification {
        var transaction = TestPayloads.transaction(appAccountToken: Self.token.uppercased(), expiresDate: expires, signedDate: signedDate)
        transaction.subscriptionGroupIdentifier = "21000001"
        let renewal = TestPayloads.renewalInfo(for: transaction, autoRenewStatus: autoRenew, signedDate: signedDate)
        return DecodedNotification(
            notification: TestPayloads.notification(type, subtype: subtype, status: status, signedDate: signedDate),
            transaction: transaction,
            renewalInfo: renewal
        )
    }

    private func decisions(_ facts: CustomerFacts, now: Date) -> [String: Bool] {
        var result: [String: Bool] = [:]
        for offer in ["retention_30", "winback_50", "loyalty"] {
            guard
                case .found(_, let product, let found) = Self.policy.lookup(
                    bundleIdentifier: TestPayloads.bundleIdentifier,
                    productIdentifier: TestPayloads.productIdentifier,
                    offerIdentifier: offer
                )
            else { continue }
            let context = EligibilityContext(
                bundleIdentifier: TestPayloads.bundleIdentifier,
                productIdentifier: TestPayloads.productIdentifier,
                offerIdentifier: offer,
                subscriptionGroupIdentifier: product.subscriptionGroupIdentifier,
                facts: facts,
                now: now
            )
            result[offer] = found.rule.evaluate(context).isEligible
        }
        return result
    }

    @Test func subscribeRenewTurnOffAutoRenewExpire() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let month: TimeInterval = 30 * 86_400
        var facts = CustomerFacts(key: CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: Self.token))
        #expect(decisions(facts, now: start) == ["retention_30": false, "winback_50": false, "loyalty": false])

        #expect(SubscriptionFolding.fold(notification(.subscribed, .initialBuy, expires: start + month, signedDate: start), into: &facts))
        #expect(facts.subscriptions.first?.state == .active)
        #expect(decisions(facts, now: start) == ["retention_30": false, "winback_50": false, "loyalty": false])

        SubscriptionFolding.fold(notification(.didRenew, expires: start + 2 * month, signedDate: start + month), into: &facts)
        #expect(facts.subscriptions.first?.renewalCount == 1)
        #expect(decisions(facts, now: start + month) == ["retention_30": false, "winback_50": false, "loyalty": true])

        SubscriptionFolding.fold(
            notification(
                .didChangeRenewalStatus,
                .autoRenewDisabled,
                expires: start + 2 * month,
                signedDate: start + month + 86_400,
                autoRenew: .off
            ),
            into: &facts
        )
        #expect(facts.subscriptions.first?.autoRenewEnabled == false)
        #expect(decisions(facts, now: start + month + 86_400) == ["retention_30": true, "winback_50": false, "loyalty": true])

        SubscriptionFolding.fold(
            notification(.expired, .voluntary, expires: start + 2 * month, signedDate: start + 2 * month, autoRenew: .off),
            into: &facts
        )
        #expect(facts.subscriptions.first?.state == .expired)
        #expect(facts.subscriptions.first?.expirationIntent == 1)
        #expect(decisions(facts, now: start + 2 * month + 86_400) == ["retention_30": false, "winback_50": true, "loyalty": false])
    }

    @Test func anOlderNotificationDoesNotMoveTheCustomerBack() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var facts = CustomerFacts(key: CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: Self.token))
        SubscriptionFolding.fold(notification(.expired, .voluntary, expires: start, signedDate: start + 100), into: &facts)
        let changed = SubscriptionFolding.fold(notification(.didRenew, expires: start + 1_000_000, signedDate: start + 50), into: &facts)
        #expect(!changed)
        #expect(facts.subscriptions.first?.state == .expired)
        #expect(facts.subscriptions.first?.renewalCount == 0)
    }

    @Test(
        "each type moves the subscription as the App Store means it",
        arguments: [
            (NotificationType.didFailToRenew, NotificationSubtype?.some(.gracePeriod), SubscriptionState.inGracePeriod),
            (.didFailToRenew, nil, .inBillingRetry),
            (.gracePeriodExpired, nil, .inBillingRetry),
            (.refund, nil, .revoked),
            (.revoke, nil, .revoked),
            (.offerRedeemed, nil, .active),
            (.renewalExtended, nil, .active),
        ]
    )
    func typesMoveTheState(_ type: NotificationType, _ subtype: NotificationSubtype?, _ expected: SubscriptionState) {
        var facts = CustomerFacts(key: CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: Self.token))
        let now = Date()
        SubscriptionFolding.fold(notification(type, subtype, expires: now + 86_400, signedDate: now), into: &facts)
        #expect(facts.subscriptions.first?.state == expected)
    }

    @Test func downgradesAndIntroductoryOffersAreRemembered() {
        var facts = CustomerFacts(key: CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: Self.token))
        let now = Date()
        var intro = notification(.subscribed, .initialBuy, expires: now + 86_400, signedDate: now)
        intro.transaction?.offerType = .introductoryOffer
        SubscriptionFolding.fold(intro, into: &facts)
        #expect(facts.subscriptions.first?.hadIntroductoryOffer == true)
        SubscriptionFolding.fold(notification(.didChangeRenewalPref, .downgrade, expires: now + 86_400, signedDate: now + 1), into: &facts)
        #expect(facts.subscriptions.first?.downgraded == true)
        SubscriptionFolding.fold(notification(.didChangeRenewalPref, .upgrade, expires: now + 86_400, signedDate: now + 2), into: &facts)
        #expect(facts.subscriptions.first?.downgraded == false)
    }

    @Test func aTestNotificationChangesNothing() {
        var facts = CustomerFacts(key: CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: Self.token))
        #expect(!SubscriptionFolding.fold(notification(.test, expires: Date(), signedDate: Date()), into: &facts))
        #expect(facts.subscriptions.isEmpty)
    }
}
