import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferApplication
import OfferModel
import OfferSignerServer
import OfferStore
import Testing

/// What a signed App Store payload proves, and no more (issue 30): retention answers bound to their request, fresh
/// real-time requests only, tokens that cannot move a customer, identifiers validated where they enter, honest
/// notification outcomes and bounded tables. Each case with the test chain, on SQLite and PostgreSQL.
@Suite struct AppStoreTrustTests {
    static func token() -> String { UUID().uuidString.lowercased() }

    static func notify(_ client: some TestClientProtocol, _ payload: String) async throws -> TestResponse {
        try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}")
    }

    static func outcome(_ response: TestResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])?["outcome"] as? String
    }

    static func code(_ response: TestResponse) -> String? {
        try? response.decode(ErrorBody.self).error.code
    }

    /// A transaction of the fixture's app and group.
    static func transaction(_ fixture: RetentionFixture, original: String, token: String?, signedDate: Date = Date()) -> JWSTransactionDecodedPayload
    {
        var transaction = TestPayloads.transaction(
            originalTransactionId: original,
            appAccountToken: token,
            expiresDate: Date() + 20 * 86_400,
            bundleIdentifier: fixture.bundle,
            signedDate: signedDate
        )
        transaction.subscriptionGroupIdentifier = "21000001"
        return transaction
    }

    // MARK: Retention answers bound to their request

    @Test(
        "a stored answer is given only to the request it answered: another original transaction or product under the same requestIdentifier is 409",
        arguments: StoreBackend.available
    )
    func answersAreBoundToTheirRequest(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let (first, second) = (Self.token(), Self.token())
        let (a, b) = (RetentionTests.otid(), RetentionTests.otid())
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: first, originalTransactionId: a, autoRenew: .off)
            try await fixture.subscribe(client, token: second, originalTransactionId: b, autoRenew: .off)
            let id = UUID().uuidString.lowercased()
            let answered = try await fixture.ask(client, try await fixture.request(originalTransactionId: a, requestIdentifier: id))
            #expect(answered.status == .ok)
            let retried = try await fixture.ask(client, try await fixture.request(originalTransactionId: a, requestIdentifier: id))
            #expect(retried.status == .ok)
            #expect(
                try retried.decode(RealtimeResponseBody.self) == (try answered.decode(RealtimeResponseBody.self)),
                "a retry gets the stored answer"
            )
            for request in [
                try await fixture.request(originalTransactionId: b, requestIdentifier: id),
                try await fixture.request(originalTransactionId: a, productIdentifier: RetentionFixture.weekly, requestIdentifier: id),
            ] {
                let refused = try await fixture.ask(client, request)
                #expect(refused.status == .conflict)
                #expect(Self.code(refused) == "request_identifier_conflict")
                #expect(!refused.text.contains(first) && !refused.text.contains(a) && !refused.text.contains("signature"), "\(refused.text)")
            }
        }
        // One signature: the refused requests signed nothing.
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 1)
    }

    @Test(
        "concurrent first deliveries of one requestIdentifier for two customers agree: one answer, the other 409",
        arguments: StoreBackend.available
    )
    func concurrentFirstDeliveriesAgree(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        // Two replicas when the database is shared (PostgreSQL); SQLite is one process's file.
        let replica = backend == .postgres ? try await RetentionFixture(backend, replicaOf: fixture) : fixture
        let (a, b) = (RetentionTests.otid(), RetentionTests.otid())
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: Self.token(), originalTransactionId: a, autoRenew: .off)
            try await fixture.subscribe(client, token: Self.token(), originalTransactionId: b, autoRenew: .off)
        }
        for _ in 0..<3 {
            let id = UUID().uuidString.lowercased()
            let requests = [
                try await fixture.request(originalTransactionId: a, requestIdentifier: id),
                try await fixture.request(originalTransactionId: b, requestIdentifier: id),
            ]
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for (index, request) in requests.enumerated() {
                    let serving = index == 0 ? fixture : replica
                    group.addTask {
                        try await serving.application.test(.router) { client in try await serving.ask(client, request).status }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted { $0.code < $1.code } == [.ok, .conflict], "\(statuses)")
        }
    }

    // MARK: Fresh requests only

    @Test(
        "a real-time request signed outside the clock skew, or by a chain not valid now, is refused and signs nothing",
        arguments: StoreBackend.available
    )
    func staleAndFutureRequestsAreRefused(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let original = RetentionTests.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: Self.token(), originalTransactionId: original, autoRenew: .off)
            for date in [Date() - 100 * 86_400, Date() - 400, Date() + 400, Date() + 300 * 86_400] {
                let response = try await fixture.ask(client, try await fixture.request(originalTransactionId: original, signedDate: date))
                #expect(response.status == .badRequest, "\(date)")
                #expect(response.text.contains("not_fresh"), "\(response.text)")
            }
            let inside = try await fixture.ask(client, try await fixture.request(originalTransactionId: original, signedDate: Date() - 200))
            #expect(inside.status == .ok, "within the skew: answered")
        }
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 1)
    }

    @Test("a chain valid at signedDate but expired now is refused for a real-time request (not_fresh)")
    func aChainExpiredNowIsRefused() async throws {
        var options = TestCertificateChain.Options()
        options.leafValidity = Date().addingTimeInterval(-86_400)...Date().addingTimeInterval(-60)
        let chain = try TestCertificateChain(options)
        let verifier = try SignedDataVerifier(
            bundleIdentifier: "com.example.app",
            appAppleId: 42,
            environments: [.sandbox],
            trustedRoots: [chain.root]
        )
        let request = DecodedRealtimeRequestBody(
            originalTransactionId: "2000000000000001",
            appAppleId: 42,
            productIdentifier: "p",
            userLocale: "en-US",
            requestIdentifier: UUID().uuidString,
            environment: .sandbox,
            signedDate: (Date() - 120).appStoreMilliseconds
        )
        let payload = try await TestJWSSigner(chain: chain).sign(request)
        // Explained later (no freshness), it verifies at its signedDate, as Apple's libraries do.
        _ = try await verifier.verifyAndDecodeRealtimeRequest(payload)
        await #expect(throws: SignedDataVerificationError.self) {
            _ = try await verifier.verifyAndDecodeRealtimeRequest(payload, freshness: .init(now: Date(), skew: 300))
        }
        do {
            _ = try await verifier.verifyAndDecodeRealtimeRequest(payload, freshness: .init(now: Date(), skew: 300))
        } catch {
            #expect(error.code == .notFresh)
        }
    }

    // MARK: Identifiers validated where they enter

    @Test("requestIdentifier must be a UUID, userLocale a locale tag", arguments: StoreBackend.available)
    func requestFieldsAreValidated(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let original = RetentionTests.otid()
        try await fixture.application.test(.router) { client in
            for identifier in ["-", "0", "abcdef", String(repeating: "a", count: 36), "6f1c8a2e-0b1d-4c2e-9f3a-7d5e6b4c3a2"] {
                let response = try await fixture.ask(
                    client,
                    try await fixture.request(originalTransactionId: original, requestIdentifier: identifier)
                )
                #expect(response.status == .badRequest, "\(identifier)")
            }
            for locale in ["en-US\n", "en\u{0}", "e", "en-US-" + String(repeating: "x", count: 40), "english", "en US", "en-ÜS"] {
                let response = try await fixture.ask(client, try await fixture.request(originalTransactionId: original, userLocale: locale))
                #expect(response.status == .badRequest, "\(locale.debugDescription)")
            }
            for locale in ["en-US", "zh-Hant-TW", "en_GB", "fr"] {
                let response = try await fixture.ask(client, try await fixture.request(originalTransactionId: original, userLocale: locale))
                #expect(response.status == .ok, "\(locale)")
            }
        }
    }

    @Test("a Sandbox notification carrying a Production transaction is refused", arguments: StoreBackend.available)
    func nestedEnvironmentMustMatch(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        var transaction = Self.transaction(fixture, original: RetentionTests.otid(), token: Self.token())
        transaction.environment = .production
        let signedTransaction = try await fixture.signer.sign(transaction)
        let notification = TestPayloads.notification(
            .didRenew,
            signedTransactionInfo: signedTransaction,
            bundleIdentifier: fixture.bundle,
            environment: .sandbox
        )
        try await fixture.application.test(.router) { client in
            let response = try await Self.notify(client, try await fixture.signer.sign(notification))
            #expect(response.status == .badRequest)
            #expect(response.text.contains("environment"))
        }
    }

    // MARK: A customer moves only with proof

    @Test("a notification whose token is bound to another original transaction does not move that customer", arguments: StoreBackend.available)
    func aTokenCannotMoveACustomer(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let victim = Self.token()
        let (theirs, intruder) = (RetentionTests.otid(), RetentionTests.otid())
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: victim, originalTransactionId: theirs, renewed: true, autoRenew: .on)
            // Purchase B made with the victim's token (a modified app), then genuine notifications for it.
            let transaction = Self.transaction(fixture, original: intruder, token: victim)
            for (type, subtype, renewal) in [
                (NotificationType.subscribed, NotificationSubtype.initialBuy, AutoRenewStatus.on),
                (.didChangeRenewalStatus, .autoRenewDisabled, .off),
            ] {
                let payload = try await fixture.signer.signNotification(
                    type,
                    subtype: subtype,
                    transaction: transaction,
                    renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: renewal),
                    bundleIdentifier: fixture.bundle,
                    environment: .sandbox
                )
                #expect(try await Self.notify(client, payload).status == .ok)
            }
            // The victim's facts are theirs: their original transaction, auto-renew on.
            let facts = try #require(
                try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: victim))
            )
            let subscription = try #require(facts.subscription(inGroup: "21000001"))
            #expect(subscription.originalTransactionId == theirs)
            #expect(subscription.autoRenewEnabled == true)
            // B is kept under its own key, and a retention request for B is answered for B, not the victim.
            let owners = try await fixture.store.customers(withOriginalTransactionId: intruder)
            #expect(owners == [CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "otid:\(intruder)")])
            let answered = try await fixture.ask(
                client,
                try await fixture.request(originalTransactionId: intruder, productIdentifier: RetentionFixture.weekly)
            )
            #expect(answered.status == .ok)
            let logged = try await fixture.store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle))
            #expect(!logged.contains { $0.applicationUsername == victim })
        }
        // The conflict is audited, under the customer it named (among every test's recent events: the PostgreSQL
        // database is shared, so the last ten may all be others').
        let audit = try await fixture.store.auditEvents(limit: 10_000, since: Date() - 600)
        #expect(
            audit.contains {
                $0.action == "customer.binding_conflict" && $0.details["conflict"] == "token_bound_elsewhere"
                    && $0.details["source"] == "notification"
            }
        )
    }

    @Test("a token on a transaction another account already holds does not take it over", arguments: StoreBackend.available)
    func aTokenCannotTakeAClaimedTransaction(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let (owner, other) = (Self.token(), Self.token())
        let original = RetentionTests.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: owner, originalTransactionId: original, autoRenew: .on)
            let transaction = Self.transaction(fixture, original: original, token: other)
            let payload = try await fixture.signer.signNotification(
                .didChangeRenewalStatus,
                subtype: .autoRenewDisabled,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: .off),
                bundleIdentifier: fixture.bundle,
                environment: .sandbox
            )
            #expect(try await Self.notify(client, payload).status == .ok)
        }
        #expect(try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: other)) == nil)
        let facts = try #require(
            try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: owner))
        )
        #expect(
            facts.subscription(inGroup: "21000001")?.autoRenewEnabled == false,
            "the notification is about the owner's subscription and is filed there"
        )
    }

    @Test("hostile tokens name no one; a transaction naming no customer is filed under no one", arguments: StoreBackend.available)
    func hostileTokensAndNoCustomer(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        try await fixture.application.test(.router) { client in
            for hostile in [String(repeating: "a", count: 8_000), "user\u{0}x", "line\nbreak", "a\u{2063}b", "OTID:2000000000000001", "otid:1"] {
                let original = RetentionTests.otid()
                let transaction = Self.transaction(fixture, original: original, token: hostile)
                let payload = try await fixture.signer.signNotification(
                    .subscribed,
                    subtype: .initialBuy,
                    transaction: transaction,
                    bundleIdentifier: fixture.bundle,
                    environment: .sandbox
                )
                #expect(try await Self.notify(client, payload).status == .ok)
                let owners = try await fixture.store.customers(withOriginalTransactionId: original)
                #expect(
                    owners == [CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "otid:\(original)")],
                    "\(hostile.prefix(20).debugDescription)"
                )
            }
            var anonymous = Self.transaction(fixture, original: "1", token: nil)
            anonymous.originalTransactionId = nil
            let payload = try await fixture.signer.signNotification(
                .subscribed,
                subtype: .initialBuy,
                transaction: anonymous,
                bundleIdentifier: fixture.bundle,
                environment: .sandbox
            )
            let response = try await Self.notify(client, payload)
            #expect(response.status == .ok)
            #expect(Self.outcome(response) == "ignored")
        }
        #expect(try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "unknown")) == nil)
    }

    @Test("outside the demo, an appAccountToken names a customer only if it is a UUID, Apple's type", arguments: StoreBackend.available)
    func tokensAreUUIDs(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        try await fixture.application.test(.router) { client in
            for (token, named) in [("lapsed-user", false), ("8C1D6A9E-0B2F-4C3D-9E8F-1A2B3C4D5E6F", true)] {
                let original = RetentionTests.otid()
                let transaction = Self.transaction(fixture, original: original, token: token)
                let payload = try await fixture.signer.signNotification(
                    .subscribed,
                    subtype: .initialBuy,
                    transaction: transaction,
                    bundleIdentifier: fixture.bundle,
                    environment: .sandbox
                )
                #expect(try await Self.notify(client, payload).status == .ok)
                let owners = try await fixture.store.customers(withOriginalTransactionId: original)
                let expected = named ? token.lowercased() : "otid:\(original)"
                #expect(owners == [CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: expected)], "\(token)")
            }
        }
    }

    @Test("an applicationUsername cannot name an internal key", arguments: FrontEnd.allCases)
    func internalKeysCannotBeNamed(_ frontEnd: FrontEnd) async throws {
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            for name in ["otid:2000000000000001", "OTID:1"] {
                let response = try await client.post(
                    "/v1/offers/sign",
                    json: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"\#(name)"}"#
                )
                #expect(response.status == .badRequest)
                #expect(try response.decode(ErrorBody.self).error.field == "applicationUsername")
            }
        }
    }

    // MARK: Ordering and honest answers

    @Test(
        "a notification dated beyond the clock skew is refused and cannot freeze the customer; a stale one says so",
        arguments: StoreBackend.available
    )
    func futureAndStaleNotifications(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let customer = Self.token()
        let original = RetentionTests.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: customer, originalTransactionId: original, autoRenew: .on)
            let future = Self.transaction(fixture, original: original, token: customer, signedDate: Date() + 300 * 86_400)
            let ahead = try await fixture.signer.signNotification(
                .didRenew,
                transaction: future,
                bundleIdentifier: fixture.bundle,
                environment: .sandbox,
                signedDate: Date() + 300 * 86_400
            )
            let refused = try await Self.notify(client, ahead)
            #expect(refused.status == .badRequest, "Apple retries a non-2xx")
            #expect(refused.text.contains("not_fresh"))
            // The real EXPIRED still applies.
            var expiring = Self.transaction(fixture, original: original, token: customer)
            expiring.expiresDate = (Date() - 60).appStoreMilliseconds
            let expired = try await fixture.signer.signNotification(
                .expired,
                subtype: .voluntary,
                transaction: expiring,
                renewalInfo: TestPayloads.renewalInfo(for: expiring, autoRenewStatus: .off),
                bundleIdentifier: fixture.bundle,
                environment: .sandbox
            )
            let applied = try await Self.notify(client, expired)
            #expect(Self.outcome(applied) == "processed")
            let facts = try #require(
                try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: customer))
            )
            #expect(facts.subscription(inGroup: "21000001")?.autoRenewEnabled == false)
            // An older notification, new to the store, changes nothing and says "stale"; its second delivery "duplicate".
            let old = Self.transaction(fixture, original: original, token: customer, signedDate: Date() - 5 * 86_400)
            let stale = try await fixture.signer.signNotification(
                .didRenew,
                transaction: old,
                bundleIdentifier: fixture.bundle,
                environment: .sandbox,
                signedDate: Date() - 5 * 86_400
            )
            #expect(Self.outcome(try await Self.notify(client, stale)) == "stale")
            #expect(Self.outcome(try await Self.notify(client, stale)) == "duplicate")
        }
    }

    @Test("a notification without notificationType is ignored and creates no customer", arguments: StoreBackend.available)
    func aNotificationWithoutTypeIsIgnored(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let customer = Self.token()
        let transaction = Self.transaction(fixture, original: RetentionTests.otid(), token: customer)
        var notification = TestPayloads.notification(
            .subscribed,
            signedTransactionInfo: try await fixture.signer.sign(transaction),
            bundleIdentifier: fixture.bundle
        )
        notification.notificationType = nil
        let payload = try await fixture.signer.sign(notification)
        try await fixture.application.test(.router) { client in
            let response = try await Self.notify(client, payload)
            #expect(response.status == .ok)
            #expect(Self.outcome(response) == "ignored")
        }
        #expect(try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: customer)) == nil)
    }

    // MARK: Bounded tables

    /// On SQLite only: the test's own file, so purging everything up to now touches no other test's rows (a
    /// PostgreSQL database is shared by the suite's parallel tests; there the purge runs with a cutoff in 1970).
    @Test("expired stored answers and processed notification UUIDs are purged by age")
    func purgeByAge() async throws {
        let backend = StoreBackend.sqlite
        let fixture = try await RetentionFixture(backend)
        let original = RetentionTests.otid()
        let id = UUID().uuidString.lowercased()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: Self.token(), originalTransactionId: original, autoRenew: .off)
            #expect(try await fixture.ask(client, try await fixture.request(originalTransactionId: original, requestIdentifier: id)).status == .ok)
        }
        // Nothing is old enough yet.
        let none = try await fixture.store.purgeExpired(storedAnswersBefore: Date() - 60, processedNotificationsBefore: Date() - 60)
        #expect(none.storedAnswers == 0 && none.processedNotifications == 0)
        // Everything before a moment from now goes: one stored answer, two notifications (subscribed, auto-renew off).
        let purged = try await fixture.store.purgeExpired(storedAnswersBefore: Date() + 1, processedNotificationsBefore: Date() + 1)
        #expect(purged.storedAnswers == 1 && purged.processedNotifications == 2)
        #expect(try await fixture.store.markNotificationProcessed(notificationUUID: "n-\(id)") == true)
        #expect(try await fixture.store.markNotificationProcessed(notificationUUID: "n-\(id)") == false)
    }

    @Test("the purge runs on PostgreSQL", .enabled(if: StoreBackend.postgresURL != nil))
    func purgeRunsOnPostgres() async throws {
        let store = try await StoreBackend.postgres.open()
        let purged = try await store.purgeExpired(
            storedAnswersBefore: Date(timeIntervalSince1970: 1),
            processedNotificationsBefore: Date(timeIntervalSince1970: 1)
        )
        #expect(purged.storedAnswers == 0 && purged.processedNotifications == 0)
        try await store.close()
    }
}
