import Foundation
import OfferModel
import Testing

@testable import OfferStore

/// Redemptions, subscription events, retention answers and the outcome report, on SQLite and PostgreSQL.
@Suite struct OutcomeStoreTests {
    let app = "com.example.outcomes-\(UUID().uuidString.prefix(8).lowercased())"
    let product = "com.example.monthly"
    let t0: Int64 = 1_800_000_000_000
    let hour: Int64 = 3_600_000

    private func otid() -> String { "\(Int.random(in: 1_000_000_000_000_000...9_999_999_999_999_999))" }

    private func signature(
        _ username: String,
        offer: String,
        at timestamp: Int64,
        format: String = "legacy",
        channel: String = "api"
    ) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "KEY1",
            bundleIdentifier: app,
            productIdentifier: product,
            offerIdentifier: offer,
            applicationUsername: username,
            timestamp: timestamp,
            format: format,
            channel: channel
        )
    }

    private func redemption(
        _ username: String,
        original: String,
        transaction: String? = nil,
        offer: String?,
        type: Int32 = 2,
        at purchase: Int64,
        price: Int64? = 1990
    ) -> Redemption {
        Redemption(
            environment: "Sandbox",
            transactionId: transaction ?? original,
            originalTransactionId: original,
            customer: CustomerKey(bundleIdentifier: app, applicationUsername: username),
            productIdentifier: product,
            offerType: type,
            offerIdentifier: offer,
            offerDiscountType: "PAY_UP_FRONT",
            offerPeriod: "P1M",
            price: price,
            currency: price == nil ? nil : "USD",
            storefront: "USA",
            purchaseDate: purchase
        )
    }

    @Test(
        "a redemption is recorded once, attributed to the latest signature before it, by customer or by original transaction",
        arguments: Backend.available
    )
    func attribution(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        // Legacy: the customer's own signature; the later of two wins, one after the purchase does not count.
        try await store.record(signature("user-a", offer: "winback", at: t0))
        try await store.record(signature("user-a", offer: "winback", at: t0 + hour, channel: "retention"))
        try await store.record(signature("user-a", offer: "winback", at: t0 + 3 * hour))
        let a = redemption("user-a", original: otid(), offer: "winback", at: t0 + 2 * hour)
        #expect(try await store.recordRedemption(a) == .recorded(channel: "retention"))
        #expect(try await store.recordRedemption(a) == .duplicate)
        // JWS: signed for the account that holds the original transaction; the transaction came filed elsewhere.
        let original = otid()
        try await store.updateCustomer(CustomerKey(bundleIdentifier: app, applicationUsername: "account-b")) { facts in
            facts.subscriptions = [
                SubscriptionFacts(subscriptionGroupIdentifier: "g", productIdentifier: product, originalTransactionId: original, state: .active)
            ]
        }
        try await store.record(signature("account-b", offer: "winback", at: t0, format: "jws"))
        #expect(
            try await store.recordRedemption(redemption("otid:\(original)", original: original, offer: "winback", at: t0 + hour))
                == .recorded(channel: "app")
        )
        // Not attributed: another offer, an offer code, an introductory offer against an eligibility signature.
        #expect(try await store.recordRedemption(redemption("user-a", original: otid(), offer: "other", at: t0 + hour)) == .recorded(channel: nil))
        try await store.record(signature("user-c", offer: "CODE", at: t0))
        #expect(
            try await store.recordRedemption(redemption("user-c", original: otid(), offer: "CODE", type: 3, at: t0 + hour)) == .recorded(channel: nil)
        )
        try await store.record(signature("user-c", offer: "", at: t0, format: "introductory-eligibility"))
        #expect(
            try await store.recordRedemption(redemption("user-c", original: otid(), offer: nil, type: 1, at: t0 + hour)) == .recorded(channel: nil)
        )
        try await store.close()
    }

    @Test(
        "renewals, refunds and expiries count whichever arrives first; a pay-as-you-go period is not a second redemption",
        arguments: Backend.available
    )
    func eventsInAnyOrder(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let first = otid()
        let second = otid()
        // Events before the redemption.
        #expect(
            try await store.recordSubscriptionEvent(
                SubscriptionEvent(
                    environment: "Sandbox",
                    originalTransactionId: first,
                    kind: .renewed,
                    at: t0 + 30 * 24 * hour,
                    transactionId: "\(first)2"
                )
            ) == 0
        )
        #expect(
            try await store.recordSubscriptionEvent(
                SubscriptionEvent(
                    environment: "Sandbox",
                    originalTransactionId: first,
                    kind: .refunded,
                    at: t0 + 40 * 24 * hour,
                    transactionId: first
                )
            ) == 0
        )
        // An event of the other environment changes nothing.
        try await store.recordSubscriptionEvent(
            SubscriptionEvent(environment: "Production", originalTransactionId: second, kind: .renewed, at: t0 + 30 * 24 * hour, transactionId: "x")
        )
        #expect(try await store.recordRedemption(redemption("user-a", original: first, offer: "winback", at: t0)) == .recorded(channel: nil))
        // Events after it.
        #expect(
            try await store.recordRedemption(redemption("user-b", original: second, offer: "winback", type: 5, at: t0)) == .recorded(channel: nil)
        )
        #expect(
            try await store.recordRedemption(
                redemption("user-b", original: second, transaction: "\(second)2", offer: "winback", type: 5, at: t0 + 24 * hour)
            ) == .continuation
        )
        #expect(
            try await store.recordSubscriptionEvent(
                SubscriptionEvent(environment: "Sandbox", originalTransactionId: second, kind: .expired, at: t0 + 50 * 24 * hour)
            ) == 1
        )
        #expect(
            try await store.recordSubscriptionEvent(
                SubscriptionEvent(environment: "Sandbox", originalTransactionId: second, kind: .expired, at: t0 + 50 * 24 * hour)
            ) == 0
        )
        let report = try await store.outcomeReport(OutcomeQuery(from: t0, to: t0 + 24 * hour, bundleIdentifier: app))
        #expect(report.offers.map(\.offerType) == [2, 5])
        #expect(report.offers.map(\.redeemed) == [1, 1])
        #expect(report.offers.map(\.renewedAfterOffer) == [1, 0])
        #expect(report.offers.map(\.refunded) == [1, 0])
        try await store.close()
    }

    @Test("the report: issued, customers, redeemed, attributed and revenue per offer; retention answers saved", arguments: Backend.available)
    func report(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        for (user, at) in [("u1", t0), ("u1", t0 + 1), ("u2", t0 + 2)] { try await store.record(signature(user, offer: "winback", at: at)) }
        try await store.record(signature("u3", offer: "save", at: t0, channel: "retention"))
        try await store.record(signature("u4", offer: "winback", at: t0 - 1))  // before the window
        _ = try await store.recordRedemption(redemption("u1", original: otid(), offer: "winback", at: t0 + hour))
        _ = try await store.recordRedemption(redemption("u9", original: otid(), offer: "winback", at: t0 + hour, price: 2500))
        _ = try await store.recordRedemption(redemption("u8", original: otid(), offer: "winback", at: t0 + hour, price: nil))
        let saved = otid()
        let left = otid()
        for (original, request) in [(saved, "r1"), (left, "r2")] {
            try await store.recordRetentionAnswer(
                RetentionAnswerRecord(
                    bundleIdentifier: app,
                    requestIdentifier: request,
                    environment: "Sandbox",
                    originalTransactionId: original,
                    productIdentifier: product,
                    offered: request == "r1",
                    answeredAt: t0 + hour
                )
            )
        }
        try await store.recordRetentionAnswer(
            RetentionAnswerRecord(
                bundleIdentifier: app,
                requestIdentifier: "r1",
                environment: "Sandbox",
                originalTransactionId: saved,
                productIdentifier: product,
                offered: true,
                answeredAt: t0 + hour
            )
        )
        // Auto-renew on before the answer does not save it; after it does.
        try await store.recordSubscriptionEvent(
            SubscriptionEvent(environment: "Sandbox", originalTransactionId: left, kind: .autoRenewEnabled, at: t0)
        )
        try await store.recordSubscriptionEvent(
            SubscriptionEvent(environment: "Sandbox", originalTransactionId: saved, kind: .autoRenewEnabled, at: t0 + 2 * hour)
        )

        let report = try await store.outcomeReport(OutcomeQuery(from: t0, to: t0 + 24 * hour, bundleIdentifier: app))
        #expect(
            report.offers == [
                OfferOutcome(
                    bundleIdentifier: app,
                    productIdentifier: product,
                    offerIdentifier: "save",
                    offerType: 2,
                    channel: "retention",
                    issued: 1,
                    customers: 1
                ),
                OfferOutcome(
                    bundleIdentifier: app,
                    productIdentifier: product,
                    offerIdentifier: "winback",
                    offerType: 2,
                    channel: "app",
                    issued: 3,
                    customers: 2,
                    redeemed: 3,
                    attributed: 1,
                    revenue: [Revenue(currency: "USD", milliunits: 4490)]
                ),
            ]
        )
        #expect(report.retention == RetentionOutcome(answered: 2, offers: 1, saved: 1))
        #expect(report.retention.saveRate == 0.5)
        // The totals the console's overview reads are the report's rows added up.
        let totals = try await store.outcomeTotals(OutcomeQuery(from: t0, to: t0 + 24 * hour, bundleIdentifier: app))
        #expect(
            totals
                == OutcomeTotals(
                    issued: 4,
                    redeemed: 3,
                    attributed: 1,
                    renewedAfterOffer: 0,
                    refunded: 0,
                    revenue: [Revenue(currency: "USD", milliunits: 4490)],
                    retention: report.retention
                )
        )
        #expect(
            try await store.outcomeReport(OutcomeQuery(from: t0, to: t0 + 24 * hour, bundleIdentifier: app, environment: "Production")).offers.map(
                \.redeemed
            ) == [0, 0]
        )
        let empty = try await store.outcomeReport(OutcomeQuery(from: t0 + 24 * hour, to: t0 + 48 * hour, bundleIdentifier: app))
        #expect(empty.offers.isEmpty && empty.retention == RetentionOutcome(answered: 0, offers: 0, saved: 0))
        try await store.close()
    }

    @Test(
        """
        retention answers recorded at once share batches: each requestIdentifier once, saved by an earlier renewal only when it came after the \
        answer
        """,
        arguments: Backend.available
    )
    func retentionAnswersTogether(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let renewedLater = otid()
        let renewedBefore = otid()
        let quiet = otid()
        try await store.recordSubscriptionEvent(
            SubscriptionEvent(
                environment: "Sandbox",
                originalTransactionId: renewedLater,
                kind: .renewed,
                at: t0 + 10 * hour,
                transactionId: "\(renewedLater)2"
            )
        )
        try await store.recordSubscriptionEvent(
            SubscriptionEvent(
                environment: "Sandbox",
                originalTransactionId: renewedBefore,
                kind: .autoRenewEnabled,
                at: t0,
                transactionId: renewedBefore
            )
        )
        // 40 requests per subscription, every one sent twice, all at once: answered at t0 + 1 h.
        let answers = [renewedLater, renewedBefore, quiet].flatMap { original in
            (0..<40).map { index in
                RetentionAnswerRecord(
                    bundleIdentifier: app,
                    requestIdentifier: "\(original)-\(index)",
                    environment: "Sandbox",
                    originalTransactionId: original,
                    productIdentifier: product,
                    offered: index.isMultiple(of: 2),
                    answeredAt: t0 + hour
                )
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for answer in (answers + answers).shuffled() { group.addTask { try await store.recordRetentionAnswer(answer) } }
            try await group.waitForAll()
        }
        let report = try await store.outcomeReport(OutcomeQuery(from: t0, to: t0 + 24 * hour, bundleIdentifier: app))
        #expect(report.retention == RetentionOutcome(answered: 120, offers: 60, saved: 40))
        try await store.close()
    }

    @Test(
        "a pay-as-you-go offer is one redemption whichever period arrives first, every delivery shuffled and sent twice",
        arguments: Backend.available
    )
    func payAsYouGoInAnyOrder(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let month = 30 * 24 * hour
        for round in 0..<4 {
            let original = otid()
            let offer = "payg-\(round)"
            // Three periods of the offer, a renewal at full price, then the same offer again for two periods.
            let periods = [0, 1, 2, 4, 5].map { period in
                redemption("user-p", original: original, transaction: "\(original)\(period)", offer: offer, at: t0 + Int64(period) * month)
            }
            let renewal = SubscriptionEvent(
                environment: "Sandbox",
                originalTransactionId: original,
                kind: .renewed,
                at: t0 + 3 * month,
                transactionId: "\(original)3"
            )
            var deliveries: [@Sendable () async throws -> Void] = periods.map { period in { _ = try await store.recordRedemption(period) } }
            deliveries.append { _ = try await store.recordSubscriptionEvent(renewal) }
            for delivery in (deliveries + deliveries).shuffled() { try await delivery() }
            func redeemed(_ from: Int64, _ to: Int64) async throws -> Int {
                try await store.outcomeReport(OutcomeQuery(from: from, to: to, bundleIdentifier: app, environment: "Sandbox"))
                    .offers.filter { $0.offerIdentifier == offer }.map(\.redeemed).reduce(0, +)
            }
            #expect(try await redeemed(t0, t0 + 6 * month) == 2, "round \(round)")
            #expect(try await redeemed(t0, t0 + 1) == 1, "the first redemption is dated by its first period")
            #expect(try await redeemed(t0 + 4 * month, t0 + 4 * month + 1) == 1, "the second, after the renewal, by its own")
            #expect(try await redeemed(t0 + 1, t0 + 4 * month) == 0)
            #expect(try await redeemed(t0 + 4 * month + 1, t0 + 6 * month) == 0)
        }
        try await store.close()
    }
}
