import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Foundation
import HTTPTypes
import OfferApplication
import OfferModel
import OfferStore
import Testing

/// `outcomes backfill`'s work: Get Notification History read from the fake and every notification ingested as if it
/// had just arrived, on both stores; a second backfill over the same span changes nothing.
@Suite struct NotificationBackfillTests {
    @Test("the history's notifications are verified and recorded once, whatever the order and however often read", arguments: StoreBackend.available)
    func backfill(_ backend: StoreBackend) async throws {
        // A chain valid for the whole span: the verifier checks each notification at the date Apple signed it.
        var options = TestCertificateChain.Options()
        let window = Date().addingTimeInterval(-200 * 86_400)...Date().addingTimeInterval(200 * 86_400)
        (options.rootValidity, options.intermediateValidity, options.leafValidity) = (window, window, window)
        let fixture = try await AppStoreFactsFixture(backend, chain: try TestCertificateChain(options))
        let now = Date()
        // Two customers: one subscribed 40 days ago and expired 10 days ago, one subscribed 5 days ago.
        var payloads: [String] = []
        for (token, original, purchased, expires, type) in [
            ("8f0b6c1e-0000-4000-8000-000000000001", "4100000000000001", -40.0, -10.0, NotificationType.expired),
            ("8f0b6c1e-0000-4000-8000-000000000002", "4100000000000002", -5.0, 25.0, NotificationType.subscribed),
        ] {
            var transaction = TestPayloads.transaction(
                originalTransactionId: original,
                purchaseDate: now.addingTimeInterval(purchased * 86_400),
                expiresDate: now.addingTimeInterval(expires * 86_400),
                environment: .production
            )
            transaction.bundleIdentifier = fixture.bundle
            transaction.appAccountToken = token
            let renewal = TestPayloads.renewalInfo(for: transaction, autoRenewStatus: type == .expired ? .off : .on)
            let notification = TestPayloads.notification(
                type,
                subtype: type == .expired ? .voluntary : .initialBuy,
                signedTransactionInfo: try await fixture.signer.sign(transaction),
                signedRenewalInfo: try await fixture.signer.sign(renewal),
                bundleIdentifier: fixture.bundle,
                environment: .production,
                appAppleId: FakeAppStore.appAppleId,
                signedDate: now.addingTimeInterval(max(purchased, min(expires, 0)) * 86_400)
            )
            payloads.append(try await fixture.signer.sign(notification))
        }
        payloads.append("not.a.notification")  // refused, counted, the rest recorded
        let history = payloads
        let fake = FakeAppStore(appKey: fixture.appKey, bundleIdentifier: fixture.bundle) { request in
            guard request.endpoint == .notificationHistory, let span = NotificationHistoryBody.Span(body: request.body),
                span.endDate - span.startDate == 60 * 86_400_000
            else { return .error(.badRequest, code: 4_000_000) }
            let page = request.query["paginationToken"] == nil ? 0 : 1
            let items = history.dropFirst(page * 2).prefix(2).map { NotificationHistoryBody.Item(signedPayload: $0, sent: span.startDate) }
            return .json(NotificationHistoryBody(paginationToken: "p\(page + 1)", hasMore: page == 0, notificationHistory: Array(items)))
        }
        try await fake.run { port in
            let service = try fixture.service(port: port)
            let backfill = NotificationBackfill(
                clients: service.appStoreClients,
                environments: [.production],
                ingestor: try #require(service.notifications)
            )
            let first = await backfill.run(days: 60, now: now)
            #expect((first.processed, first.refused, first.failed) == (2, 1, 0), "\(first.problems)")
            #expect(first.problems.count == 1 && first.problems[0].hasPrefix("\(fixture.bundle) Production, notification 3:"))
            let again = await backfill.run(days: 60, now: now)
            #expect((again.processed, again.duplicate, again.refused) == (0, 2, 1))
            let lapsed = try #require(
                try await fixture.store.customerFacts(
                    for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "8f0b6c1e-0000-4000-8000-000000000001")
                )
            )
            #expect(lapsed.subscriptions.map(\.originalTransactionId) == ["4100000000000001"])
            #expect(lapsed.subscriptions.first?.autoRenewEnabled == false)
            let recent = try #require(
                try await fixture.store.customerFacts(
                    for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "8f0b6c1e-0000-4000-8000-000000000002")
                )
            )
            #expect(recent.subscriptions.map(\.originalTransactionId) == ["4100000000000002"])
            #expect(await fake.ledger.paginationTokens == [nil, "p1", nil, "p1"])
            #expect(await backfill.run(days: 181, now: now).problems.first?.contains("1 to 180") == true)
        }
        try await fixture.store.close()
    }
}
