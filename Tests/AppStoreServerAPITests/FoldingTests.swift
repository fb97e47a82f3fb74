import AppStoreNotifications
import AppStoreServerAPI
import AppStoreTestSupport
import Foundation
import OfferModel
import Testing

/// Folding fetched answers into facts the store already has.
@Suite struct FoldingTests {
    let key = CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: "customer-1")

    @Test func anAnswerOlderThanTheStoredFactsDoesNotMoveThemBack() {
        let signedLongAgo = Date().addingTimeInterval(-3600)
        let transaction = TestPayloads.transaction(environment: .production, signedDate: signedLongAgo)
        let fetched = FetchedSubscriptionFacts(
            statuses: SubscriptionStatuses(
                environment: .production,
                lastTransactions: [
                    VerifiedLastTransaction(
                        subscriptionGroupIdentifier: "21000001",
                        status: .expired,
                        transaction: transaction,
                        renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: .off, signedDate: signedLongAgo)
                    )
                ]
            ),
            history: nil
        )
        var facts = CustomerFacts(
            key: key,
            subscriptions: [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "21000001",
                    productIdentifier: TestPayloads.productIdentifier,
                    state: .active,
                    lastSignedDate: Date()
                )  // a newer notification was folded already
            ]
        )
        let before = facts
        #expect(fetched.fold(into: &facts) == false)
        #expect(facts == before)
    }

    @Test func historyAddsTheIntroductoryOfferWithoutTouchingTheState() {
        let now = Date()
        let latest = Fixture.transaction(transactionId: "1000000000000003")
        var introductory = Fixture.transaction(purchaseDate: now.addingTimeInterval(-60 * 86_400))
        introductory.offerType = .introductoryOffer
        let fetched = FetchedSubscriptionFacts(
            statuses: SubscriptionStatuses(
                environment: .production,
                lastTransactions: [
                    VerifiedLastTransaction(
                        subscriptionGroupIdentifier: "21000001",
                        status: .billingGracePeriod,
                        transaction: latest,
                        renewalInfo: TestPayloads.renewalInfo(for: latest)
                    )
                ]
            ),
            history: TransactionHistory(environment: .production, transactions: [introductory, latest], isComplete: true)
        )
        let facts = fetched.facts(for: key)
        #expect(facts.subscriptions.count == 1)
        #expect(facts.subscriptions.first?.state == .inGracePeriod)
        #expect(facts.subscriptions.first?.hadIntroductoryOffer == true)
        #expect(facts.subscriptions.first?.autoRenewEnabled == true)
    }

    @Test func aSubscriberTheStatusesDoNotListIsCreatedFromTheHistory() {
        let expired = Fixture.transaction(
            purchaseDate: Date().addingTimeInterval(-90 * 86_400),
            expiresDate: Date().addingTimeInterval(-60 * 86_400)
        )
        let fetched = FetchedSubscriptionFacts(
            statuses: SubscriptionStatuses(environment: .production, lastTransactions: []),
            history: TransactionHistory(environment: .production, transactions: [expired], isComplete: true)
        )
        let facts = fetched.facts(for: key)
        #expect(facts.subscriptions.first?.state == .expired)
    }
}
