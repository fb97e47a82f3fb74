import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// The stores the integration tests run on: SQLite always, PostgreSQL when OFFER_SIGNER_TEST_DATABASE_URL is set.
enum StoreBackend: String, Sendable, CustomTestStringConvertible {
    case sqlite, postgres
    static let postgresURL = ProcessInfo.processInfo.environment["OFFER_SIGNER_TEST_DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// The URL a test's store opens: `postgresURL` with its pool bounded to `connectionsPerStore` connections
    /// (`pool_max_conns`), unless the URL bounds it itself. The suite runs its PostgreSQL tests at once, a store
    /// each (two for a replica); `scripts/start-postgres.sh` sizes the server's `max_connections` for them.
    /// How long a test's store waits for the database: the whole suite runs at once on two cores, so a connection
    /// can take longer than the service's default bound (2 s), which the outage tests check on stores of their own.
    static let testStoreTimeout: Duration = .seconds(30)

    static var postgresStoreURL: String? {
        postgresURL.map { url in
            url.contains("pool_max_conns=") ? url : url + (url.contains("?") ? "&" : "?") + "pool_max_conns=\(connectionsPerStore)"
        }
    }
    /// Enough for a test's concurrent requests (a customer's lock serializes them anyway) and a nested lease.
    static let connectionsPerStore = 4
    static var available: [StoreBackend] { postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }
    var testDescription: String { rawValue }

    /// `exclusive`: a SQLite file taken for this process as a server takes it (``SQLiteFileLock``), so a decision
    /// that reads issued offers serializes on the customer's in-process lock (``CustomerLocks``), not a transaction.
    func open(exclusive: Bool = false) async throws -> any OfferStore {
        switch self {
        case .sqlite:
            let file = ScratchFolder.sqliteFile("offer-signer-it")
            return try await makeOfferStore(
                databaseURL: "sqlite:\(file)",
                logger: Logger(label: "test"),
                timeout: Self.testStoreTimeout,
                exclusive: exclusive
            )
        case .postgres:
            return try await makeOfferStore(
                databaseURL: try #require(Self.postgresStoreURL),
                logger: Logger(label: "test"),
                timeout: Self.testStoreTimeout
            )
        }
    }
}

/// A service with a policy, a store, and App Store verification against a test chain.
struct StoreFixture {
    let bundle: String
    let store: any OfferStore
    let service: SigningPipeline
    let key: SigningKey
    let signer: TestJWSSigner
    static let adminToken = "carol-token-0123456789abcdef"

    /// A fixture with a new app and store; `replicaOf` makes a second service (its own store connection, the
    /// same database, app, key and chain), as a second replica sharing PostgreSQL would be.
    init(_ backend: StoreBackend, replicaOf other: StoreFixture? = nil, exclusive: Bool = false) async throws {
        bundle = other?.bundle ?? "com.example.it-\(UUID().uuidString.prefix(8).lowercased())"
        store = try await backend.open(exclusive: exclusive)
        key = try other?.key ?? SigningKey.generate(keyIdentifier: "TESTKEY001")
        var options = TestCertificateChain.Options()
        // the sequence is signed over months
        options.leafValidity = Date().addingTimeInterval(-365 * 86_400)...Date().addingTimeInterval(365 * 86_400)
        let chain = try other?.signer.chain ?? TestCertificateChain(options)
        signer = TestJWSSigner(chain: chain)
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
                    products:
                      - productIdentifier: \(TestPayloads.productIdentifier)
                        subscriptionGroupIdentifier: "21000001"
                        introductoryOffer:
                          rules: [never-had-introductory-offer]
                        offers:
                          - offerIdentifier: winback_50
                            rules: [app-store-subscriber, { lapsed: { minDays: 0, maxDays: 365 } }, { cap: { count: 2, days: 30 } }]
                          - offerIdentifier: retention_30
                            rules: [auto-renew-off]
                          - offerIdentifier: loyalty
                            rules: [active-subscriber, { loyalty: { minRenewals: 1 } }]
                          - offerIdentifier: sorry
                            rules: [customer-service-grant]
                          - offerIdentifier: once
                            rules: [{ cap: { count: 1, days: 30 } }]
                          - offerIdentifier: everyone
                """
        )
        let verifier = try SignedDataVerifier(bundleIdentifier: bundle, environments: [.sandbox], trustedRoots: [chain.root])
        // Its customers are named readably (dup-user, …) in their appAccountToken, as the demo's stand-in App Store
        // names them; the App Store's own rule (a UUID) is tested in AppStoreTrustTests and RetentionTests.
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: Logger(label: "test"), readableTokens: true)
        service = SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            policy: policy,
            store: store,
            notifications: ingestor
        )
    }

    var application: some ApplicationProtocol {
        Application(
            router: buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: nil),
                adminTokens: try! BearerTokens(parsing: "carol:\(Self.adminToken)")
            ),
            logger: Logger(label: "test")
        )
    }

    func transaction(_ token: String, expires: Date, signedDate: Date, introductory: Bool = false) -> JWSTransactionDecodedPayload {
        var transaction = TestPayloads.transaction(
            originalTransactionId: "\(Int.random(in: 1_000_000_000...9_999_999_999))",
            appAccountToken: token,
            expiresDate: expires,
            bundleIdentifier: bundle,
            signedDate: signedDate
        )
        transaction.subscriptionGroupIdentifier = "21000001"
        if introductory { transaction.offerType = .introductoryOffer }
        return transaction
    }

    func notify(
        _ client: some TestClientProtocol,
        _ type: NotificationType,
        _ subtype: NotificationSubtype? = nil,
        transaction: JWSTransactionDecodedPayload,
        autoRenew: AutoRenewStatus = .on,
        signedDate: Date
    ) async throws -> TestResponse {
        let payload = try await signer.signNotification(
            type,
            subtype: subtype,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: autoRenew, signedDate: signedDate),
            bundleIdentifier: bundle,
            environment: .sandbox,
            signedDate: signedDate
        )
        return try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}")
    }

    func sign(_ client: some TestClientProtocol, _ offer: String, _ username: String, extra: String = "") async throws -> TestResponse {
        try await client.post(
            "/v1/offers/sign",
            json:
                #"""
                {"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"\#(offer)",\#
                "applicationUsername":"\#(username)"\#(extra)}
                """#
        )
    }

    func eligible(_ client: some TestClientProtocol, _ username: String) async throws -> [String: Bool] {
        let answer = try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"\#(username)"}"#).decode(EligibilityAnswer.self)
        return Dictionary(uniqueKeysWithValues: answer.offers.map { ($0.offerIdentifier, $0.eligible) })
    }
}

@Suite struct StoreIntegrationTests {
    static let token = "8c1d6a9e-0b2f-4c3d-9e8f-1a2b3c4d5e6f"

    @Test("subscribe, renew, auto-renew off, expire: retention then win-back, over HTTP", arguments: StoreBackend.available)
    func notificationSequenceMovesTheCustomer(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let now = Date()
        let month: TimeInterval = 30 * 86_400
        try await fixture.application.test(.router) { client in
            #expect(
                try await fixture.eligible(client, Self.token) == [
                    "winback_50": false, "retention_30": false, "loyalty": false, "sorry": false, "once": true, "everyone": true,
                ]
            )

            let first = fixture.transaction(Self.token, expires: now - month + 86_400, signedDate: now - 2 * month)
            var response = try await fixture.notify(client, .subscribed, .initialBuy, transaction: first, signedDate: now - 2 * month)
            #expect(response.status == .ok)
            #expect(response.text.contains("processed"))
            var renewed = first
            renewed.expiresDate = (now + 86_400).appStoreMilliseconds
            response = try await fixture.notify(client, .didRenew, transaction: renewed, signedDate: now - month)
            #expect(
                try await fixture.eligible(client, Self.token) == [
                    "winback_50": false, "retention_30": false, "loyalty": true, "sorry": false, "once": true, "everyone": true,
                ]
            )

            response = try await fixture.notify(
                client,
                .didChangeRenewalStatus,
                .autoRenewDisabled,
                transaction: renewed,
                autoRenew: .off,
                signedDate: now - 86_400
            )
            #expect(try await fixture.eligible(client, Self.token)["retention_30"] == true)
            let retention = try await fixture.sign(client, "retention_30", Self.token.uppercased())
            #expect(retention.status == .ok, "\(retention.text)")

            var expired = renewed
            expired.expiresDate = (now - 3_600).appStoreMilliseconds
            response = try await fixture.notify(client, .expired, .voluntary, transaction: expired, autoRenew: .off, signedDate: now - 1_800)
            #expect(
                try await fixture.eligible(client, Self.token) == [
                    "winback_50": true, "retention_30": false, "loyalty": false, "sorry": false, "once": true, "everyone": true,
                ]
            )

            // The win-back offer, twice; the cap refuses the third with its reason.
            #expect(try await fixture.sign(client, "winback_50", Self.token).status == .ok)
            #expect(try await fixture.sign(client, "winback_50", Self.token).status == .ok)
            let capped = try await fixture.sign(client, "winback_50", Self.token)
            #expect(capped.status == .forbidden)
            #expect(try capped.decode(RefusalBody.self).error.reasons?.map(\.code) == ["cap_reached"])

            // A JWS is recorded the same way.
            let jws = try await fixture.sign(client, "everyone", Self.token, extra: #","format":"jws""#)
            #expect(jws.status == .ok)
            let jwsNonce = try jws.decode(JWSAnswer.self).nonce
            let jwsLogged = try await fixture.store.issuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, offerIdentifier: "everyone")
            )
            #expect(jwsLogged.map(\.nonce) == [jwsNonce])
            #expect(jwsLogged.first?.format == "jws")

            // Every bundle returned is in the issued-signature log.
            let logged = try await fixture.store.issuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: Self.token)
            )
            #expect(logged.map(\.offerIdentifier).sorted() == ["everyone", "retention_30", "winback_50", "winback_50"])
            #expect(Set(logged.map(\.nonce)).contains(try retention.decode(SignedLegacyOffer.self).nonce))
        }
        try await fixture.store.close()
    }

    @Test("the same notification twice changes nothing; an older one does not move the customer back", arguments: StoreBackend.available)
    func notificationsAreIdempotentAndOrdered(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let now = Date()
        try await fixture.application.test(.router) { client in
            let transaction = fixture.transaction("dup-user", expires: now + 86_400, signedDate: now)
            let payload = try await fixture.signer.signNotification(
                .didRenew,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction),
                bundleIdentifier: fixture.bundle,
                signedDate: now
            )
            let body = "{\"signedPayload\":\"\(payload)\"}"
            #expect(try await client.post("/v1/notifications/appstore", json: body).text.contains("processed"))
            #expect(try await client.post("/v1/notifications/appstore", json: body).text.contains("duplicate"))
            let key = CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "dup-user")
            #expect(try await fixture.store.customerFacts(for: key)?.subscriptions.first?.renewalCount == 1)
            // An EXPIRED signed before the renewal arrives late: ignored for the state.
            _ = try await fixture.notify(client, .expired, .voluntary, transaction: transaction, signedDate: now - 3_600)
            #expect(try await fixture.store.customerFacts(for: key)?.subscriptions.first?.state == .active)
        }
        try await fixture.store.close()
    }

    @Test("a notification that does not verify is refused with 400 and changes nothing", arguments: StoreBackend.available)
    func invalidNotificationsAreRefused(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let stranger = TestJWSSigner(chain: try TestCertificateChain())  // a chain to a root the service does not trust
        try await fixture.application.test(.router) { client in
            let transaction = fixture.transaction("victim", expires: Date() + 86_400, signedDate: Date())
            let forged = try await stranger.signNotification(
                .subscribed,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction),
                bundleIdentifier: fixture.bundle
            )
            let response = try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(forged)\"}")
            #expect(response.status == .badRequest)
            #expect(try response.decode(ErrorBody.self).error.code == "invalid_signed_payload")
            let garbage = try await client.post("/v1/notifications/appstore", json: #"{"signedPayload":"not.a.jws"}"#)
            #expect(garbage.status == .badRequest)
            #expect(try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "victim")) == nil)
        }
        try await fixture.store.close()
    }

    @Test(
        "when the store fails, a notification gets 503 so that the App Store retries; a signature is not returned",
        arguments: StoreBackend.available
    )
    func storeFailureIs503(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.store.close()  // the database goes away
        try await fixture.application.test(.router) { client in
            let transaction = fixture.transaction("unlucky", expires: Date() + 86_400, signedDate: Date())
            let response = try await fixture.notify(client, .didRenew, transaction: transaction, signedDate: Date())
            #expect(response.status == .serviceUnavailable)
            #expect(try response.decode(ErrorBody.self).error.code == "store_unavailable")
            let sign = try await fixture.sign(client, "everyone", "unlucky")
            #expect(sign.status == .serviceUnavailable)
            #expect(!sign.text.contains("signature\":\"M"))
        }
    }

    @Test("a signedTransaction establishes the App Store's own rule for an unknown customer", arguments: StoreBackend.available)
    func signedTransactionEstablishesSubscriber(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            let refused = try await fixture.sign(client, "winback_50", "newcomer")
            #expect(try refused.decode(RefusalBody.self).error.reasons?.map(\.code) == ["never_subscribed", "not_lapsed"])
            let transaction = fixture.transaction("newcomer", expires: Date() - 10 * 86_400, signedDate: Date() - 40 * 86_400)
            let signed = try await fixture.signer.sign(transaction)
            let accepted = try await fixture.sign(client, "winback_50", "newcomer", extra: #","signedTransaction":"\#(signed)""#)
            #expect(accepted.status == .ok)
            let facts = try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "newcomer"))
            #expect(facts?.subscriptions.first?.state == .expired)
            // Someone else's transaction is refused.
            let theirs = try await fixture.sign(client, "winback_50", "someone-else", extra: #","signedTransaction":"\#(signed)""#)
            #expect(theirs.status == .forbidden)
            #expect(try theirs.decode(ErrorBody.self).error.field == "signedTransaction")
        }
        try await fixture.store.close()
    }

    @Test("an admin grants a customer-service offer; it is used once; everything is audited", arguments: StoreBackend.available)
    func customerServiceGrant(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            func admin(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil) async throws -> TestResponse {
                try await client.execute(
                    uri: uri,
                    method: method,
                    headers: [.authorization: "Bearer \(StoreFixture.adminToken)", .contentType: "application/json"],
                    body: body.map { ByteBuffer(string: $0) }
                )
            }
            #expect(try await fixture.sign(client, "sorry", "unlucky").status == .forbidden)
            let granted = try await admin(
                .post,
                "/admin/customers/\(fixture.bundle)/unlucky/grants",
                #"{"productIdentifier":"\#(TestPayloads.productIdentifier)","offerIdentifier":"sorry","expiresInDays":7}"#
            )
            #expect(granted.status == .ok)
            #expect(try await fixture.sign(client, "sorry", "unlucky").status == .ok)
            let again = try await fixture.sign(client, "sorry", "unlucky")
            #expect(try again.decode(RefusalBody.self).error.reasons?.map(\.code) == ["no_grant"])

            let flagged = try await admin(.post, "/admin/customers/\(fixture.bundle)/unlucky/flags", #"{"flags":{"churnRisk":"high"}}"#)
            #expect(flagged.text.contains("churnRisk"))
            let facts = try await admin(.get, "/admin/customers/\(fixture.bundle)/unlucky")
            #expect(facts.text.contains("\"known\":true"))
            #expect(facts.text.contains("carol"))  // grantedBy

            let log = try await admin(.get, "/admin/signatures?bundleIdentifier=\(fixture.bundle)&applicationUsername=unlucky")
            #expect(log.text.contains("\"offerIdentifier\":\"sorry\""))
            let audit = try await admin(.get, "/admin/audit?limit=50")
            #expect(audit.text.contains("customer.grant") && audit.text.contains("customer.flags"))
            // One time format: every timestamp of every admin answer is Unix milliseconds, an integer near now.
            for (route, response) in [("customer", facts), ("signatures", log), ("audit", audit), ("flags", flagged), ("grant", granted)] {
                let stamps = try Timestamps.all(in: response.text)
                #expect(!stamps.isEmpty, "\(route) has timestamps")
                for (name, value) in stamps {
                    #expect(Timestamps.isUnixMilliseconds(value), "\(route).\(name) = \(value) is not Unix milliseconds")
                }
            }
            let bad = try await admin(.get, "/admin/signatures?since=yesterday")
            #expect(try bad.decode(ErrorBody.self).error.field == "since")
            let unauthorized = try await client.execute(uri: "/admin/signatures", method: .get)
            #expect(unauthorized.status == .unauthorized)
        }
        try await fixture.store.close()
    }

    @Test("introductory-offer eligibility follows the customer store, for the customer who owns the transaction", arguments: StoreBackend.available)
    func introductoryEligibilityFromTheStore(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            func ask(_ username: String, _ transactionId: String, signedTransaction: String? = nil) async throws -> TestResponse {
                let signed = signedTransaction.map { #","signedTransaction":"\#($0)""# } ?? ""
                return try await client.post(
                    "/v1/offers/introductory-eligibility",
                    json:
                        #"""
                        {"productIdentifier":"\#(TestPayloads.productIdentifier)","transactionId":"\#(transactionId)",\#
                        "applicationUsername":"\#(username)"\#(signed)}
                        """#
                )
            }
            func allow(_ response: TestResponse) throws -> Bool? {
                let answer = try response.decode(JWSAnswer.self)
                let claims = try #require(JWSOfferVerifier.decode(answer.signature)).claims
                #expect(claims.allowIntroductoryOffer == answer.allowIntroductoryOffer)
                return answer.allowIntroductoryOffer
            }
            // A transaction nothing links to a customer is refused, never decided on empty facts.
            let unknown = try await ask("fresh", "2000000123456789")
            #expect(unknown.status == .notFound)
            #expect(try unknown.decode(ErrorBody.self).error.code == "unknown_transaction")
            // The customer's own signed transaction links it: decided for them.
            let fresh = fixture.transaction("fresh", expires: Date() + 86_400, signedDate: Date())
            let freshJWS = try await fixture.signer.sign(fresh)
            #expect(try allow(try await ask("fresh", try #require(fresh.originalTransactionId), signedTransaction: freshJWS)) == true)
            // A notification links another one; that customer had an introductory offer.
            let transaction = fixture.transaction("had-intro", expires: Date() + 86_400, signedDate: Date(), introductory: true)
            _ = try await fixture.notify(client, .subscribed, .initialBuy, transaction: transaction, signedDate: Date())
            let original = try #require(transaction.originalTransactionId)
            #expect(try allow(try await ask("had-intro", original)) == false)
            // A renewal's transaction is known by its subscription once the renewal's signed transaction comes with it.
            var renewal = transaction
            renewal.transactionId = "\(Int.random(in: 1_000_000_000...9_999_999_999))"
            renewal.offerType = nil
            let renewalId = try #require(renewal.transactionId)
            #expect(try await ask("had-intro", renewalId).status == .notFound)
            #expect(try allow(try await ask("had-intro", renewalId, signedTransaction: try await fixture.signer.sign(renewal))) == false)
            // Someone else asking with that customer's transaction is refused.
            let stolen = try await ask("fresh", original)
            #expect(stolen.status == .forbidden)
            #expect(try stolen.decode(ErrorBody.self).error.code == "customer_mismatch")
        }
        try await fixture.store.close()
    }

    @Test("a signed transaction without appAccountToken stays with the customer who presented it first", arguments: StoreBackend.available)
    func unclaimedTransactionsAreClaimedOnce(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        try await fixture.application.test(.router) { client in
            var transaction = fixture.transaction("ignored", expires: Date() + 86_400, signedDate: Date())
            transaction.appAccountToken = nil
            let jws = try await fixture.signer.sign(transaction)
            let first = try await fixture.sign(client, "everyone", "first-owner", extra: #","signedTransaction":"\#(jws)""#)
            #expect(first.status == .ok)
            let second = try await fixture.sign(client, "everyone", "second-comer", extra: #","signedTransaction":"\#(jws)""#)
            #expect(second.status == .conflict)
            #expect(try second.decode(ErrorBody.self).error.code == "transaction_claimed")
            let again = try await fixture.sign(client, "everyone", "first-owner", extra: #","signedTransaction":"\#(jws)""#)
            #expect(again.status == .ok)
            let owners = try await fixture.store.customers(withOriginalTransactionId: try #require(transaction.originalTransactionId))
            #expect(owners.map(\.applicationUsername) == ["first-owner"])
        }
        try await fixture.store.close()
    }
}

@Suite struct NotificationReplayTests {
    @Test("a capture replays once; bad lines are counted and named", arguments: StoreBackend.available)
    func replay(_ backend: StoreBackend) async throws {
        let fixture = try await StoreFixture(backend)
        let ingestor = try #require(fixture.service.notifications)
        let now = Date()
        let transaction = fixture.transaction("replayed", expires: now + 86_400, signedDate: now)
        let subscribed = try await fixture.signer.signNotification(
            .subscribed,
            subtype: .initialBuy,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction),
            bundleIdentifier: fixture.bundle,
            signedDate: now
        )
        let renewed = try await fixture.signer.signNotification(
            .didRenew,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction),
            bundleIdentifier: fixture.bundle,
            signedDate: now + 1
        )
        let capture = "\(subscribed)\n{\"signedPayload\":\"\(renewed)\"}\n\nnot-a-jws\n{broken\n"
        let first = await NotificationIngestion(ingestor: ingestor).replay(capture)
        #expect(first.processed == 2 && first.refused == 2 && first.failed == 0)
        #expect(first.problems.map { $0.prefix(7) } == ["line 4:", "line 5:"])
        let again = await NotificationIngestion(ingestor: ingestor).replay(capture)
        #expect(again.processed == 0 && again.duplicate == 2)
        let facts = try await fixture.store.customerFacts(for: CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "replayed"))
        #expect(facts?.subscriptions.first?.renewalCount == 1)
        try await fixture.store.close()
    }
}

/// The timestamps of a JSON answer: every value under a key the API uses for a time.
enum Timestamps {
    static let names: Set<String> = [
        "updatedAt", "expiresDate", "originalPurchaseDate", "lastSignedDate", "grantedAt", "expiresAt", "usedAt", "at", "timestamp", "loadedAt",
    ]

    static func all(in text: String) throws -> [(String, Any)] {
        var found: [(String, Any)] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, inner) in object {
                    if names.contains(key) { found.append((key, inner)) } else { walk(inner) }
                }
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(try JSONSerialization.jsonObject(with: Data(text.utf8)))
        return found
    }

    /// An integer of Unix milliseconds: from 2001 (10^12) to the year 5138 (10^14) — neither Unix seconds
    /// (~1.8·10^9) nor Foundation's seconds since 2001 (~8·10^8). (Audit events of other tests sharing a
    /// PostgreSQL database may hold far-future fixtures, so "near now" would not do.)
    static func isUnixMilliseconds(_ value: Any) -> Bool {
        guard let number = value as? NSNumber, number.doubleValue == Double(number.int64Value) else { return false }
        return (1_000_000_000_000...100_000_000_000_000).contains(number.int64Value)
    }
}
