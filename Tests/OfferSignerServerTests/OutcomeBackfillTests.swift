import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Foundation
import HTTPTypes
import HummingbirdTesting
import OfferApplication
import OfferModel
import OfferStore
import Testing

/// `offer-signer outcomes backfill`: Get Notification History read from the loopback fake of Apple's API, page by
/// page, and every notification ingested as a live delivery.
@Suite struct OutcomeBackfillTests {
    private func payloads(_ fixture: AppStoreFactsFixture, purchase: Date) async throws -> [String] {
        var payloads: [String] = []
        for (index, type) in [OfferType.promotionalOffer, .offerCode, .winBackOffer].enumerated() {
            let original = "\(41_000_000_000_000_000 + Int.random(in: 0...999_999_999) * 10 + index)"
            var transaction = fixture.transaction(
                original: original,
                token: UUID().uuidString.lowercased(),
                purchased: purchase,
                expires: purchase + 30 * 86_400
            )
            transaction.offerType = type
            transaction.offerIdentifier = "history-\(type.rawValue)"
            transaction.price = 990
            payloads.append(
                try await fixture.signer.signNotification(
                    .subscribed,
                    subtype: .resubscribe,
                    transaction: transaction,
                    renewalInfo: TestPayloads.renewalInfo(for: transaction),
                    bundleIdentifier: fixture.bundle,
                    environment: .production,
                    appAppleId: FakeAppStore.appAppleId,
                    signedDate: purchase
                )
            )
        }
        return payloads
    }

    @Test(
        "the history is read page by page and each notification recorded once; a second backfill changes nothing",
        arguments: StoreBackend.available
    )
    func backfillRecordsTheHistory(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let start = Date()
        let history = try await payloads(fixture, purchase: start - 86_400) + ["not.a.jws"]
        let fake = fixture.fake { request in
            guard request.endpoint == .notificationHistory else { return .error(.notFound, code: 4_040_010) }
            return .notificationHistory(history, pageSize: 3, for: request)
        }
        try await fake.run { port in
            let service = try fixture.service(port: port)
            let ingestor = try #require(service.notifications)
            let client = try #require(service.appStoreClients[fixture.bundle])
            let backfill = NotificationBackfill(clients: [fixture.bundle: client], environments: [.production], ingestor: ingestor)
            let first = await backfill.run(days: 30, now: start)
            #expect(first.processed == 3 && first.refused == 1, "\(first)")
            let second = await backfill.run(days: 30, now: start)
            #expect(second.duplicate == 3 && second.processed == 0, "\(second)")
            #expect(await fake.ledger.count("production", .notificationHistory) == 4)  // two pages, twice

            let report = try await service.outcomes.outcomeReport(
                from: start - 2 * 86_400,
                to: start,
                bundleIdentifier: fixture.bundle,
                environment: "Production"
            )
            #expect(
                report.offers.map { "\($0.offerIdentifier) \($0.offerType) \($0.redeemed) \($0.attributed)" } == [
                    "history-2 2 1 0", "history-3 3 1 0", "history-4 4 1 0",
                ]
            )
            #expect(await backfill.run(days: 181, now: start).problems.first?.contains("1 to 180") == true)
        }
        try await fixture.store.close()
    }

    @Test("the App Store Server API's answer for a stranger records its offers and renewals, after the request", arguments: StoreBackend.available)
    func appStoreAnswersAreRecorded(_ backend: StoreBackend) async throws {
        let fixture = try await AppStoreFactsFixture(backend)
        let original = "\(42_000_000_000_000_000 + Int.random(in: 0...999_999_999))"
        let purchased = Date().addingTimeInterval(-100 * 86_400)
        var first = fixture.transaction(original: original, purchased: purchased, expires: purchased + 30 * 86_400)
        first.offerType = .offerCode
        first.offerIdentifier = "SPRING"
        var renewal = fixture.transaction(original: original, id: "\(original)9", purchased: purchased + 30 * 86_400, expires: Date() - 30 * 86_400)
        renewal.transactionReason = .renewal
        let statuses = try await FakeResponse.statuses(
            [(.expired, renewal, TestPayloads.renewalInfo(for: renewal, autoRenewStatus: .off))],
            signer: fixture.signer,
            environment: .production,
            bundleIdentifier: fixture.bundle
        )
        let history = try await FakeResponse.history(
            [first, renewal],
            signer: fixture.signer,
            environment: .production,
            bundleIdentifier: fixture.bundle
        )
        let fake = fixture.fake { $0.endpoint == .statuses ? statuses : history }
        try await fake.run { port in
            let service = try fixture.service(port: port)
            try await fixture.application(service).test(.router) { client in
                let response = try await fixture.sign(client, "lapsed-2", transactionId: original)
                #expect(response.status == .ok, "\(response.text)")
            }
            // Recorded after the request: wait for it.
            var offers: [OfferOutcome] = []
            for _ in 0..<100 {
                offers = try await service.outcomes.outcomeReport(
                    from: purchased - 86_400,
                    to: purchased + 86_400,
                    bundleIdentifier: fixture.bundle,
                    environment: nil
                ).offers
                if offers.first?.renewedAfterOffer == 1 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(offers.map { "\($0.offerIdentifier) \($0.offerType) \($0.redeemed) \($0.renewedAfterOffer)" } == ["SPRING 3 1 1"])
        }
        try await fixture.store.close()
    }

    @Test("a history that says it has more but gives no new page is refused; what was asked is Apple's shape")
    func endlessHistoryIsRefused() async throws {
        let fixture = try await AppStoreFactsFixture(.sqlite)
        let bodies = BodyLog()
        let fake = fixture.fake { request in
            await bodies.append(request.body)
            return .json(NotificationHistoryBody(paginationToken: "same", hasMore: true, signedPayloads: []))
        }
        try await fake.run { port in
            let service = try fixture.service(port: port)
            let client = try #require(service.appStoreClients[fixture.bundle])
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.notificationHistory(from: Date() - 86_400, to: Date(), environment: .production) { _ in }
            }
            #expect(error?.code == .invalidResponse)
            await #expect(throws: AppStoreServerAPIError.self) {
                try await client.notificationHistory(from: Date() - 200 * 86_400, to: Date(), environment: .production) { _ in }
            }
        }
        let sent = try #require(await bodies.all.first)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sent.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["startDate", "endDate"])
        #expect(await bodies.all.count == 2)  // the first page, then the repeated token: refused
        try await fixture.store.close()
    }
}

private actor BodyLog {
    private(set) var all: [String] = []
    func append(_ body: String) { all.append(body) }
}
