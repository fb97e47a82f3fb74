import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferApplication
import OfferModel
import OfferStore
import Testing

/// Offer outcomes end to end (issue 27): offers signed over HTTP, Apple-shaped notifications signed by the test chain
/// for those and for offers the service did not sign, delivered shuffled and twice, and the report's exact counts.
@Suite struct OutcomeTests {
    static func otid() -> String { "\(Int.random(in: 3_000_000_000_000_000...3_999_999_999_999_999))" }

    private func transaction(
        _ fixture: StoreFixture,
        token: String?,
        original: String,
        id: String? = nil,
        offer: String?,
        type: OfferType?,
        purchase: Date,
        price: Int64 = 1990
    ) -> JWSTransactionDecodedPayload {
        var transaction = TestPayloads.transaction(
            originalTransactionId: original,
            transactionId: id,
            appAccountToken: token,
            purchaseDate: purchase,
            bundleIdentifier: fixture.bundle
        )
        transaction.offerType = type
        transaction.offerIdentifier = offer
        transaction.offerDiscountType = type == nil ? nil : .payUpFront
        transaction.offerPeriod = type == nil ? nil : "P1M"
        transaction.price = price
        return transaction
    }

    private func notification(
        _ fixture: StoreFixture,
        _ type: NotificationType,
        _ subtype: NotificationSubtype?,
        _ transaction: JWSTransactionDecodedPayload
    ) async throws -> String {
        let payload = try await fixture.signer.signNotification(
            type,
            subtype: subtype,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction),
            bundleIdentifier: fixture.bundle
        )
        return "{\"signedPayload\":\"\(payload)\"}"
    }

    @Test("signed and unsigned offers, notifications shuffled and delivered twice: the report's counts are exact", arguments: StoreBackend.available)
    func shuffledNotificationsGiveExactCounts(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let start = Date()
        let (originalA, originalB, originalD, originalE) = (Self.otid(), Self.otid(), Self.otid(), Self.otid())
        try await fixture.application.test(.router) { client in
            // B subscribed before (its original transaction is filed under its account), then the service signs:
            // a legacy offer for A, a JWS for B, a capped offer for E — after E already bought it elsewhere.
            let subscribed = transaction(fixture, token: "outcome-b", original: originalB, offer: nil, type: nil, purchase: start - 40 * 86_400)
            #expect(
                try await client.post("/v1/notifications/appstore", json: try await notification(fixture, .subscribed, .initialBuy, subscribed))
                    .status == .ok
            )
            #expect(try await fixture.sign(client, "everyone", "outcome-a").status == .ok)
            #expect(try await fixture.sign(client, "everyone", "outcome-b", extra: #","format":"jws","transactionId":"\#(originalB)""#).status == .ok)
            #expect(try await fixture.sign(client, "once", "outcome-e").status == .ok)
            let purchase = Date() + 1

            var deliveries: [String] = []
            // A redeems the signed offer and renews at full price after it.
            deliveries.append(
                try await notification(
                    fixture,
                    .subscribed,
                    .resubscribe,
                    transaction(fixture, token: "outcome-a", original: originalA, offer: "everyone", type: .promotionalOffer, purchase: purchase)
                )
            )
            deliveries.append(
                try await notification(
                    fixture,
                    .didRenew,
                    nil,
                    transaction(
                        fixture,
                        token: "outcome-a",
                        original: originalA,
                        id: "\(originalA)1",
                        offer: nil,
                        type: nil,
                        purchase: purchase + 3_600
                    )
                )
            )
            // B redeems the JWS offer (the transaction carries no token: found by its original transaction), is refunded.
            var redeemedB = transaction(
                fixture,
                token: nil,
                original: originalB,
                id: "\(originalB)7",
                offer: "everyone",
                type: .promotionalOffer,
                purchase: purchase
            )
            deliveries.append(try await notification(fixture, .offerRedeemed, .upgrade, redeemedB))
            redeemedB.revocationDate = (purchase + 7_200).appStoreMilliseconds
            redeemedB.revocationReason = RevocationReason(rawValue: 0)
            deliveries.append(try await notification(fixture, .refund, nil, redeemedB))
            // D redeems the same offer, signed elsewhere; C an offer code; E bought "once" before it was signed.
            deliveries.append(
                try await notification(
                    fixture,
                    .subscribed,
                    .resubscribe,
                    transaction(fixture, token: "outcome-d", original: originalD, offer: "everyone", type: .promotionalOffer, purchase: purchase)
                )
            )
            deliveries.append(
                try await notification(
                    fixture,
                    .subscribed,
                    .initialBuy,
                    transaction(fixture, token: "outcome-c", original: Self.otid(), offer: "SPRING", type: .offerCode, purchase: purchase)
                )
            )
            deliveries.append(
                try await notification(
                    fixture,
                    .offerRedeemed,
                    nil,
                    transaction(fixture, token: "outcome-e", original: originalE, offer: "once", type: .promotionalOffer, purchase: start - 3_600)
                )
            )
            // An offer type Apple adds later is kept; an absurd price is left out, the redemption kept.
            deliveries.append(
                try await notification(
                    fixture,
                    .subscribed,
                    .resubscribe,
                    transaction(fixture, token: "outcome-f", original: Self.otid(), offer: "future", type: OfferType(rawValue: 7), purchase: purchase)
                )
            )
            deliveries.append(
                try await notification(
                    fixture,
                    .subscribed,
                    .resubscribe,
                    transaction(
                        fixture,
                        token: "outcome-g",
                        original: Self.otid(),
                        offer: "absurd",
                        type: .promotionalOffer,
                        purchase: purchase,
                        price: 1_000_000_000_000_000
                    )
                )
            )

            for delivery in deliveries.shuffled() + deliveries.shuffled() {
                let response = try await client.post("/v1/notifications/appstore", json: delivery)
                #expect(response.status == .ok, "\(response.text)")
            }

            let from = Int64((start.timeIntervalSince1970 - 86_400) * 1000)
            let to = Int64((start.timeIntervalSince1970 + 86_400) * 1000)
            let response = try await client.execute(
                uri: "/admin/outcomes?from=\(from)&to=\(to)&bundleId=\(fixture.bundle)",
                method: .get,
                headers: [.authorization: "Bearer \(StoreFixture.adminToken)"]
            )
            #expect(response.status == .ok, "\(response.text)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            let report = try decoder.decode(OutcomeReport.self, from: Data(response.body.readableBytesView))
            func row(
                _ offer: String,
                _ type: Int32,
                issued: Int = 0,
                customers: Int = 0,
                redeemed: Int,
                attributed: Int = 0,
                renewed: Int = 0,
                refunded: Int = 0,
                revenue: Int64?
            ) -> OfferOutcome {
                OfferOutcome(
                    bundleIdentifier: fixture.bundle,
                    productIdentifier: TestPayloads.productIdentifier,
                    offerIdentifier: offer,
                    offerType: type,
                    channel: "app",
                    issued: issued,
                    customers: customers,
                    redeemed: redeemed,
                    attributed: attributed,
                    renewedAfterOffer: renewed,
                    refunded: refunded,
                    revenue: revenue.map { [Revenue(currency: "USD", milliunits: $0)] } ?? []
                )
            }
            #expect(
                report.offers == [
                    row("SPRING", 3, redeemed: 1, revenue: 1990),
                    row("absurd", 2, redeemed: 1, revenue: nil),
                    row("everyone", 2, issued: 2, customers: 2, redeemed: 3, attributed: 2, renewed: 1, refunded: 1, revenue: 3 * 1990),
                    row("future", 7, redeemed: 1, revenue: 1990),
                    row("once", 2, issued: 1, customers: 1, redeemed: 1, revenue: 1990),
                ]
            )
            #expect(report.retention == RetentionOutcome(answered: 0, offers: 0, saved: 0))
            #expect(response.text.contains(#""bundleId":"\#(fixture.bundle)""#) && response.text.contains(#""productId":"#))

            // Per day: the days of the window add up to the window.
            let daily = try await client.execute(
                uri: "/admin/outcomes/daily?from=\(from)&to=\(to)&bundleId=\(fixture.bundle)",
                method: .get,
                headers: [.authorization: "Bearer \(StoreFixture.adminToken)"]
            )
            #expect(daily.status == .ok, "\(daily.text)")
            struct Daily: Decodable { var days: [OutcomeReport] }
            let days = try decoder.decode(Daily.self, from: Data(daily.body.readableBytesView)).days
            #expect(days.count >= 2 && days.count <= 3)
            #expect(days.flatMap(\.offers).reduce(0) { $0 + $1.redeemed } == 7)
            #expect(days.flatMap(\.offers).reduce(0) { $0 + $1.issued } == 3)
        }
        try await fixture.store.close()
    }

    @Test(
        "a burst of 200 notifications at once (40 delivered twice, 20 refunds among them): every one counted once",
        arguments: StoreBackend.available
    )
    func burstOfNotificationsIsCountedExactly(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let start = Date()
        let purchase = start + 1
        let customers = (0..<140).map { n in (token: "burst-\(n)", original: Self.otid()) }
        var deliveries: [(body: String, purchase: Bool)] = []
        for customer in customers {
            let bought = transaction(
                fixture,
                token: customer.token,
                original: customer.original,
                offer: "everyone",
                type: .promotionalOffer,
                purchase: purchase
            )
            deliveries.append((try await notification(fixture, .subscribed, .resubscribe, bought), true))
        }
        // 40 delivered twice (the same notificationUUID), 20 refunded in the same burst: in either order.
        deliveries += deliveries.prefix(40)
        for customer in customers.suffix(20) {
            var refunded = transaction(
                fixture,
                token: customer.token,
                original: customer.original,
                offer: "everyone",
                type: .promotionalOffer,
                purchase: purchase
            )
            refunded.revocationDate = (purchase + 7_200).appStoreMilliseconds
            refunded.revocationReason = RevocationReason(rawValue: 0)
            deliveries.append((try await notification(fixture, .refund, nil, refunded), false))
        }
        #expect(deliveries.count == 200)
        let burst = deliveries.shuffled()
        try await fixture.application.test(.router) { client in
            let outcomes = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
                for delivery in burst {
                    group.addTask {
                        let response = try await client.post("/v1/notifications/appstore", json: delivery.body)
                        #expect(response.status == .ok, "\(response.text)")
                        struct Answer: Decodable { var outcome: String }
                        return (try response.decode(Answer.self).outcome, delivery.purchase)
                    }
                }
                var outcomes: [String: Int] = [:]
                for try await (outcome, purchase) in group where purchase { outcomes[outcome, default: 0] += 1 }
                return outcomes
            }
            // Of each pair delivered together exactly one is filed, the other is a duplicate (a purchase filed after
            // its own refund is stale: the facts already hold what it says).
            #expect(outcomes["duplicate"] == 40)
            #expect(outcomes["processed", default: 0] + outcomes["stale", default: 0] == 140)
            #expect(outcomes.values.reduce(0, +) == 180)
        }
        let report = try await fixture.service.outcomes.outcomeReport(
            from: start - 60,
            to: start + 86_400,
            bundleIdentifier: fixture.bundle,
            environment: "Sandbox"
        )
        #expect(report.offers.map { "\($0.offerIdentifier) \($0.redeemed) \($0.refunded)" } == ["everyone 140 20"])
        for customer in customers {
            let facts = try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: customer.token))
            #expect(facts?.subscriptions.map(\.originalTransactionId) == [customer.original])
        }
        try await fixture.store.close()
    }

    @Test(
        "retention answers: one customer redeems and turns auto-renew back on, one leaves; a retried request counts once",
        arguments: StoreBackend.available
    )
    func retentionSaveRate(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let start = Date()
        let (stays, leaves) = (RetentionTests.otid(), RetentionTests.otid())
        let token = UUID().uuidString.lowercased()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: stays, autoRenew: .off)
            try await fixture.subscribe(client, token: nil, originalTransactionId: leaves, autoRenew: .off)
            let requestIdentifier = UUID().uuidString.lowercased()
            for (original, identifier) in [(stays, requestIdentifier), (stays, requestIdentifier), (leaves, UUID().uuidString.lowercased())] {
                let response = try await fixture.ask(
                    client,
                    try await fixture.request(originalTransactionId: original, requestIdentifier: identifier)
                )
                #expect(response.status == .ok, "\(response.text)")
                #expect(try response.decode(RealtimeResponseBody.self).promotionalOffer != nil)
            }
            // The customer who stays redeems the retention offer (Apple's type 5) and turns auto-renew back on.
            var redeemed = TestPayloads.transaction(
                originalTransactionId: stays,
                transactionId: "\(stays)9",
                appAccountToken: token,
                purchaseDate: Date() + 1,
                bundleIdentifier: fixture.bundle
            )
            redeemed.offerType = .retentionOffer
            redeemed.offerIdentifier = "retention_30"
            for _ in 0..<2 {
                try await fixture.notify(client, .offerRedeemed, nil, redeemed, autoRenew: .off, signedDate: Date())
            }
            try await fixture.notify(client, .didChangeRenewalStatus, .autoRenewEnabled, redeemed, autoRenew: .on, signedDate: Date() + 1)
        }
        let report = try await fixture.service.outcomes.outcomeReport(
            from: start - 60,
            to: start + 86_400,
            bundleIdentifier: fixture.bundle,
            environment: "Sandbox"
        )
        #expect(report.retention == RetentionOutcome(answered: 2, offers: 2, saved: 1))
        #expect(report.retention.saveRate == 0.5)
        #expect(
            report.offers.map { "\($0.offerIdentifier) \($0.offerType) \($0.channel) \($0.issued) \($0.customers) \($0.redeemed) \($0.attributed)" }
                == [
                    "retention_30 2 retention 2 2 0 0", "retention_30 5 retention 0 0 1 1",
                ]
        )
        try await fixture.store.close()
    }

    @Test(
        "hostile values are left out or the redemption refused, never a 500; a signed transaction an app sends is recorded",
        arguments: StoreBackend.available
    )
    func hostileValuesAndSignedTransactions(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let start = Date()
        try await fixture.application.test(.router) { client in
            func offer(
                _ identifier: String,
                type: OfferType = .promotionalOffer,
                purchase: Date = Date(),
                price: Int64 = 1990,
                currency: String = "USD"
            ) -> JWSTransactionDecodedPayload {
                var transaction = transaction(
                    fixture,
                    token: "hostile-\(Int.random(in: 0...999_999))",
                    original: Self.otid(),
                    offer: identifier,
                    type: type,
                    purchase: purchase,
                    price: price
                )
                transaction.currency = currency
                return transaction
            }
            let refused = [
                offer(String(repeating: "x", count: 300)), offer("line\nbreak"),
                offer("far-future", purchase: Date(timeIntervalSince1970: 4_102_444_800)),
                offer("before-the-app-store", purchase: Date(timeIntervalSince1970: 1_000_000_000)),
            ]
            let kept = [offer("negative", price: -5), offer("odd-currency", currency: "us$"), offer("largest-type", type: OfferType(rawValue: .max))]
            for transaction in refused + kept {
                let response = try await client.post(
                    "/v1/notifications/appstore",
                    json: try await notification(fixture, .subscribed, .resubscribe, transaction)
                )
                #expect(response.status == .ok, "\(response.text)")
            }
            // A signed transaction an app sends with a sign request: its offer code is recorded for the customer.
            var presented = transaction(fixture, token: "st-user", original: Self.otid(), offer: "SUMMER", type: .offerCode, purchase: Date())
            presented.expiresDate = (Date() + 86_400).appStoreMilliseconds
            let signed = try await fixture.signer.sign(presented)
            #expect(try await fixture.sign(client, "everyone", "st-user", extra: #","signedTransaction":"\#(signed)""#).status == .ok)
        }
        let report = try await fixture.service.outcomes.outcomeReport(
            from: start - 60,
            to: start + 86_400,
            bundleIdentifier: fixture.bundle,
            environment: nil
        )
        #expect(
            report.offers.map { "\($0.offerIdentifier) \($0.offerType) \($0.issued) \($0.redeemed) \($0.revenue.count)" } == [
                "SUMMER 3 0 1 1", "everyone 2 1 0 0", "largest-type 2147483647 0 1 1", "negative 2 0 1 0", "odd-currency 2 0 1 0",
            ]
        )
        try await fixture.store.close()
    }

    @Test(
        "missing fields, an unknown environment, an unknown app: recorded as far as valid or refused with the reason, never a 500",
        arguments: StoreBackend.available
    )
    func missingFieldsAndUnknownApps(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let start = Date()
        let tag = UUID().uuidString.prefix(8).lowercased()
        try await fixture.application.test(.router) { client in
            func offer(_ identifier: String, _ change: (inout JWSTransactionDecodedPayload) -> Void = { _ in }) -> JWSTransactionDecodedPayload {
                var transaction = transaction(
                    fixture,
                    token: "missing-\(Int.random(in: 0...999_999))",
                    original: Self.otid(),
                    offer: "\(identifier)-\(tag)",
                    type: .promotionalOffer,
                    purchase: Date()
                )
                change(&transaction)
                return transaction
            }
            let deliveries = [
                offer("no-transaction") { $0.transactionId = nil }, offer("no-original") { $0.originalTransactionId = nil },
                offer("no-purchase") { $0.purchaseDate = nil }, offer("no-product") { $0.productIdentifier = nil },
                offer("no-currency") { $0.currency = nil },
            ]
            for transaction in deliveries {
                let response = try await client.post(
                    "/v1/notifications/appstore",
                    json: try await notification(fixture, .subscribed, .resubscribe, transaction)
                )
                #expect(response.status == .ok, "\(transaction.offerIdentifier ?? ""): \(response.text)")
            }
            // Another app's notification, one from an environment the app does not accept, a transaction of an
            // unknown environment: refused with the reason, not a 500.
            for (bundle, environment, transactionEnvironment) in [
                ("com.example.unknown-\(tag)", AppStoreEnvironment.sandbox, AppStoreEnvironment.sandbox), (fixture.bundle, .production, .production),
                (fixture.bundle, .sandbox, AppStoreEnvironment(rawValue: "Staging")),
            ] {
                let other = offer("elsewhere") { $0.environment = transactionEnvironment }
                let payload = try await fixture.signer.signNotification(
                    .subscribed,
                    subtype: .resubscribe,
                    transaction: other,
                    renewalInfo: TestPayloads.renewalInfo(for: other),
                    bundleIdentifier: bundle,
                    environment: environment
                )
                let response = try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}")
                #expect(response.status == .badRequest, "\(bundle) \(environment): \(response.status) \(response.text)")
                #expect(response.text.contains("invalid_signed_payload"))
            }
        }
        let report = try await fixture.service.outcomes.outcomeReport(from: start - 60, to: start + 86_400, bundleIdentifier: nil, environment: nil)
        #expect(
            report.offers.filter { $0.offerIdentifier.hasSuffix(tag) }.map {
                "\($0.offerIdentifier.prefix { $0 != "-" }) \($0.redeemed) \($0.revenue.count)"
            }
            .sorted() == ["no 1 0"],
            "of the valid deliveries, only the one without a currency is recorded (without revenue)"
        )
        try await fixture.store.close()
    }

    @Test("a window that is not one is 400 naming the parameter")
    func badWindows() async throws {
        let fixture = try await StoreFixture(.sqlite)
        try await fixture.application.test(.router) { client in
            for (query, field) in [
                ("from=yesterday", "from"), ("from=2026-11-02&to=2026-11-01", "from"), ("from=2020-01-01&to=2026-01-01", "to"),
                ("environment=Pro%0Aduction", "environment"), ("environment=Foo", "environment"),
                ("from=2026-02-30", "from"), ("from=2025-02-29", "from"), ("to=2026-11-01T25:00:00Z", "to"),
                ("to=2026-11-01T23:60:00Z", "to"), ("from=2026-13-01", "from"),
            ] {
                let response = try await client.execute(
                    uri: "/admin/outcomes?\(query)",
                    method: .get,
                    headers: [.authorization: "Bearer \(StoreFixture.adminToken)"]
                )
                #expect(response.status == .badRequest, "\(query)")
                #expect(try response.decode(ErrorBody.self).error.field == field, "\(query)")
            }
            for query in ["from=2026-11-01&to=2026-11-02T00:00:00Z", "from=2024-02-29&to=2024-03-01T23:59:59.5%2B01:00", "environment=Sandbox"] {
                let ok = try await client.execute(
                    uri: "/admin/outcomes?\(query)",
                    method: .get,
                    headers: [.authorization: "Bearer \(StoreFixture.adminToken)"]
                )
                #expect(ok.status == .ok, "\(query): \(ok.text)")
            }
            let unauthorized = try await client.execute(uri: "/admin/outcomes", method: .get)
            #expect(unauthorized.status == .unauthorized)
        }
        try await fixture.store.close()
    }

    @Test("the report as a table and as CSV")
    func text() {
        let report = OutcomeReport(
            from: Date(timeIntervalSince1970: 1_800_000_000),
            to: Date(timeIntervalSince1970: 1_800_086_400),
            offers: [
                OfferOutcome(
                    bundleIdentifier: "com.example.app",
                    productIdentifier: "monthly",
                    offerIdentifier: "=HYPERLINK(\"x\")",
                    offerType: 2,
                    channel: "app",
                    issued: 10,
                    customers: 9,
                    redeemed: 4,
                    attributed: 3,
                    renewedAfterOffer: 2,
                    refunded: 1,
                    revenue: [Revenue(currency: "USD", milliunits: 4990)]
                )
            ],
            retention: RetentionOutcome(answered: 4, offers: 2, saved: 1)
        )
        let csv = report.csv().components(separatedBy: "\r\n")
        #expect(
            csv[0]
                == """
                from,to,bundleId,productId,offerIdentifier,offerType,channel,issued,customers,redeemed,attributed,renewedAfterOffer,refunded,\
                revenue
                """
        )
        #expect(csv[1] == #"2027-01-15T08:00:00Z,2027-01-16T08:00:00Z,com.example.app,monthly,"'=HYPERLINK(""x"")",2,app,10,9,4,3,2,1,USD 4.990"#)
        let table = report.table()
        #expect(table.contains("Retention: 4 answered, 2 with an offer, 1 saved (25.0 %)"))
        #expect(table.contains("USD 4.990"))
    }
}
