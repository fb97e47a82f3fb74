import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// A service that answers the App Store's real-time retention requests: a policy with retention entries, a store,
/// and App Store verification (by appAppleId) against a test chain.
struct RetentionFixture {
    static let appAppleId: Int64 = 1_234_567_890
    static let monthly = TestPayloads.productIdentifier
    static let weekly = "com.example.offersigner.weekly"
    static let annual = "com.example.offersigner.annual"
    static let plain = "com.example.offersigner.plain"
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    let bundle: String
    let store: any OfferStore
    let service: SigningPipeline
    /// How long a retention request may take before the fallback message is answered.
    let deadline: Duration
    let key: SigningKey
    let signer: TestJWSSigner

    /// `deadline`: generous by default, so that tests about the decision do not answer the fallback on a loaded
    /// machine (the whole suite runs in parallel on few cores); the deadline test sets its own.
    let chain: TestCertificateChain

    /// `replicaOf`: another replica of that fixture's service (same app, key, chain and database, its own store
    /// connection and service), for the checks that must hold across replicas sharing PostgreSQL.
    init(
        _ backend: StoreBackend,
        deadline: Duration = .seconds(20),
        slowStore: Duration? = nil,
        fallback: Bool = true,
        replicaOf other: RetentionFixture? = nil
    ) async throws {
        bundle = other?.bundle ?? "com.example.rm-\(UUID().uuidString.prefix(8).lowercased())"
        store = try await backend.open()
        key = try other?.key ?? SigningKey.generate(keyIdentifier: "TESTKEY001")
        var options = TestCertificateChain.Options()
        options.leafValidity = Date().addingTimeInterval(-365 * 86_400)...Date().addingTimeInterval(365 * 86_400)
        let chain = try other?.chain ?? TestCertificateChain(options)
        self.chain = chain
        signer = TestJWSSigner(chain: chain)
        let registry = RuleRegistry.builtIn
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    issuerIdentifier: \(Self.issuer)
                    appAppleId: \(Self.appAppleId)
                    products:
                      - productIdentifier: \(Self.monthly)
                        subscriptionGroupIdentifier: "21000001"
                        offers:
                          - offerIdentifier: retention_30
                            rules: [auto-renew-off, { cap: { count: 3, days: 30 } }]
                        retention:
                          - promotionalOffer: retention_30
                            messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01
                          - alternateProduct: \(Self.annual)
                            messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02
                            rules: [active-subscriber, { loyalty: { minRenewals: 1 } }]
                          \(fallback ? "- messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03" : "")
                      - productIdentifier: \(Self.weekly)
                        subscriptionGroupIdentifier: "21000001"
                        offers:
                          - offerIdentifier: retention_v1
                            rules: [auto-renew-off]
                        retention:
                          - promotionalOffer: retention_v1
                            messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e04
                            signature: v1
                          - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03
                      - productIdentifier: \(Self.annual)
                        subscriptionGroupIdentifier: "21000001"
                      - productIdentifier: \(Self.plain)
                """,
            registry: registry
        )
        let verifier = try SignedDataVerifier(
            bundleIdentifier: bundle,
            appAppleId: Self.appAppleId,
            environments: [.sandbox],
            trustedRoots: [chain.root]
        )
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: Logger(label: "test"))
        // The service may see the store slowed down (the real store, answering late), to run into the deadline.
        let realStore = store
        let serviceStore: any OfferStore = slowStore.map { SlowStore(base: realStore, delay: $0) } ?? realStore
        service = SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: key, source: "test")]),
            policy: policy,
            store: serviceStore,
            notifications: ingestor
        )
        self.deadline = deadline
    }

    var application: some ApplicationProtocol {
        Application(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil, retentionDeadline: deadline)),
            logger: Logger(label: "test")
        )
    }

    /// A customer known from notifications: subscribed (and renewed when `renewed`), auto-renew as given.
    func subscribe(
        _ client: some TestClientProtocol,
        token: String?,
        originalTransactionId: String,
        renewed: Bool = false,
        autoRenew: AutoRenewStatus
    ) async throws {
        let now = Date()
        var transaction = TestPayloads.transaction(
            originalTransactionId: originalTransactionId,
            appAccountToken: token,
            expiresDate: now + 20 * 86_400,
            bundleIdentifier: bundle,
            signedDate: now - 40 * 86_400
        )
        transaction.subscriptionGroupIdentifier = "21000001"
        try await notify(client, .subscribed, .initialBuy, transaction, autoRenew: .on, signedDate: now - 40 * 86_400)
        if renewed { try await notify(client, .didRenew, nil, transaction, autoRenew: .on, signedDate: now - 10 * 86_400) }
        if autoRenew == .off {
            try await notify(client, .didChangeRenewalStatus, .autoRenewDisabled, transaction, autoRenew: .off, signedDate: now - 86_400)
        }
    }

    func notify(
        _ client: some TestClientProtocol,
        _ type: NotificationType,
        _ subtype: NotificationSubtype?,
        _ transaction: JWSTransactionDecodedPayload,
        autoRenew: AutoRenewStatus,
        signedDate: Date
    ) async throws {
        let payload = try await signer.signNotification(
            type,
            subtype: subtype,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: autoRenew, signedDate: signedDate),
            bundleIdentifier: bundle,
            environment: .sandbox,
            signedDate: signedDate
        )
        let response = try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}")
        #expect(response.status == .ok, "\(response.text)")
    }

    /// A real-time request as the App Store signs it.
    func request(
        originalTransactionId: String,
        productIdentifier: String = RetentionFixture.monthly,
        requestIdentifier: String = UUID().uuidString.lowercased(),
        appAppleId: Int64 = RetentionFixture.appAppleId,
        signer: TestJWSSigner? = nil,
        signedDate: Date = Date(),
        userLocale: String = "en-US"
    ) async throws -> String {
        let body = DecodedRealtimeRequestBody(
            originalTransactionId: originalTransactionId,
            appAppleId: appAppleId,
            productIdentifier: productIdentifier,
            userLocale: userLocale,
            requestIdentifier: requestIdentifier,
            environment: .sandbox,
            signedDate: signedDate.appStoreMilliseconds
        )
        return try await (signer ?? self.signer).sign(body)
    }

    func ask(_ client: some TestClientProtocol, _ signedPayload: String) async throws -> TestResponse {
        try await client.post("/v1/retention/appstore", json: "{\"signedPayload\":\"\(signedPayload)\"}")
    }
}

/// The real store, slow to grant the customer's lock (a database under load), in a way cancellation cannot cut
/// short: the retention decision waits on it without blocking a thread, as in production, and the decision is
/// made only after the deadline passed.
private struct SlowStore: OfferStore {
    let base: any OfferStore
    let delay: Duration

    func migrate() async throws { try await base.migrate() }
    func customerFacts(for key: CustomerKey) async throws -> CustomerFacts? { try await base.customerFacts(for: key) }
    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        try await base.customers(withOriginalTransactionId: originalTransactionId)
    }
    func updateCustomer(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts {
        try await base.updateCustomer(key, claiming: claims, body)
    }
    func applyNotification(
        notificationUUID: String,
        to key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> Bool {
        try await base.applyNotification(notificationUUID: notificationUUID, to: key, claiming: claims, body)
    }
    func saveConsoleSession(_ session: ConsoleSessionRecord, keepingAtMost limit: Int) async throws {
        try await base.saveConsoleSession(session, keepingAtMost: limit)
    }
    func consoleSession(digest: String) async throws -> ConsoleSessionRecord? { try await base.consoleSession(digest: digest) }
    func deleteConsoleSession(digest: String) async throws { try await base.deleteConsoleSession(digest: digest) }
    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws {
        try await base.replaceRetentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment, with: records)
    }
    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord] {
        try await base.retentionCatalogue(bundleIdentifier: bundleIdentifier, environment: environment)
    }
    func transactionOwner(bundleIdentifier: String, environment: String, originalTransactionId: String) async throws -> CustomerKey? {
        try await base.transactionOwner(bundleIdentifier: bundleIdentifier, environment: environment, originalTransactionId: originalTransactionId)
    }
    func markNotificationProcessed(notificationUUID: String) async throws -> Bool {
        try await base.markNotificationProcessed(notificationUUID: notificationUUID)
    }
    func purgeExpired(storedAnswersBefore: Date, processedNotificationsBefore: Date) async throws -> (storedAnswers: Int, processedNotifications: Int)
    {
        try await base.purgeExpired(storedAnswersBefore: storedAnswersBefore, processedNotificationsBefore: processedNotificationsBefore)
    }
    func withCustomerTransaction<T: Sendable>(
        _ key: CustomerKey,
        issuedSince since: Int64?,
        answerKey: String?,
        _ body: @Sendable (CustomerSnapshot) async throws -> CustomerCommit<T>
    ) async throws -> T {
        let delay = self.delay
        await Task.detached { try? await Task.sleep(for: delay) }.value
        return try await base.withCustomerTransaction(key, issuedSince: since, answerKey: answerKey, body)
    }
    func record(_ signature: IssuedSignature, startWhenReady: StartWhenReady?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        base.record(signature, startWhenReady: startWhenReady, completion: completion)
    }
    func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature] { try await base.issuedSignatures(matching: query) }
    func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int { try await base.countIssuedSignatures(matching: query) }
    func recordRedemption(_ redemption: Redemption) async throws -> RedemptionRecording { try await base.recordRedemption(redemption) }
    func recordSubscriptionEvent(_ event: SubscriptionEvent) async throws -> Int { try await base.recordSubscriptionEvent(event) }
    func recordRetentionAnswer(_ answer: RetentionAnswerRecord) async throws { try await base.recordRetentionAnswer(answer) }
    func purgeSubscriptionEvents(recordedBefore: Date) async throws -> Int { try await base.purgeSubscriptionEvents(recordedBefore: recordedBefore) }
    func purgeSubscriptionTransactions(purchasedBefore: Date) async throws -> Int {
        try await base.purgeSubscriptionTransactions(purchasedBefore: purchasedBefore)
    }
    func outcomeReport(_ query: OutcomeQuery) async throws -> OutcomeReport { try await base.outcomeReport(query) }
    func outcomeTotals(_ query: OutcomeQuery) async throws -> OutcomeTotals { try await base.outcomeTotals(query) }
    func outcomePage(_ query: OutcomeQuery, limit: Int, offset: Int) async throws -> OutcomePage {
        try await base.outcomePage(query, limit: limit, offset: offset)
    }
    func dailyOutcomeTotals(_ query: OutcomeQuery) async throws -> [DailyOutcomeTotals] { try await base.dailyOutcomeTotals(query) }
    func appendAudit(_ event: AuditEvent) async throws { try await base.appendAudit(event) }
    func auditEvents(limit: Int, since: Date?) async throws -> [AuditEvent] { try await base.auditEvents(limit: limit, since: since) }
    func auditEvents(limit: Int, since: Date?, until: Date?, actions: Set<String>?) async throws -> [AuditEvent] {
        try await base.auditEvents(limit: limit, since: since, until: until, actions: actions)
    }
    func document(named name: String) async throws -> StoredDocument? { try await base.document(named: name) }
    func replaceDocument(named name: String, version: Int64, text: String) async throws -> Bool {
        try await base.replaceDocument(named: name, version: version, text: text)
    }
    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool { try await base.recordExposure(exposure) }
    func exposureCounts(experimentIdentifier: String) async throws -> [String: Int] {
        try await base.exposureCounts(experimentIdentifier: experimentIdentifier)
    }
    func experimentOutcomes(_ query: ExperimentOutcomeQuery) async throws -> [String: ExperimentVariantOutcome] {
        try await base.experimentOutcomes(query)
    }
    func recordTransaction(_ transaction: SubscriptionTransaction) async throws { try await base.recordTransaction(transaction) }
    func ping() async throws { try await base.ping() }
    func close() async throws { try await base.close() }
}

@Suite struct RetentionTests {
    static func otid() -> String { "\(Int.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))" }

    @Test(
        "auto-renew off: a promotional offer V2 whose transactionId is the original transaction, verified, recorded, idempotent",
        arguments: StoreBackend.available
    )
    func autoRenewOffGetsTheSignedOffer(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let token = UUID().uuidString.lowercased()
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
            let requestIdentifier = UUID().uuidString.lowercased()
            let signed = try await fixture.request(originalTransactionId: original, requestIdentifier: requestIdentifier)
            let response = try await fixture.ask(client, signed)
            #expect(response.status == .ok, "\(response.text)")
            let answer = try response.decode(RealtimeResponseBody.self)
            #expect(answer.message == nil && answer.alternateProduct == nil)
            let offer = try #require(answer.promotionalOffer)
            #expect(offer.messageIdentifier == "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01")
            #expect(offer.promotionalOfferSignatureV1 == nil)
            let jws = try #require(offer.promotionalOfferSignatureV2)
            // Exactly one field on the wire.
            let object = try #require(try JSONSerialization.jsonObject(with: Data(response.text.utf8)) as? [String: Any])
            #expect(Array(object.keys) == ["promotionalOffer"])

            let verification = await fixture.service.verification.verifyJWS(jws)
            #expect(verification.valid, "\(verification.message ?? "")")
            #expect(verification.claims?.transactionId == original)
            #expect(verification.claims?.offerIdentifier == "retention_30")
            #expect(verification.claims?.productIdentifier == RetentionFixture.monthly)
            #expect(verification.claims?.bid == fixture.bundle)
            #expect(verification.claims?.iss == RetentionFixture.issuer)
            #expect(verification.header?.kid == "TESTKEY001")

            // Recorded for the customer, with the channel and the request identifier.
            let logged = try await fixture.store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle))
            #expect(logged.count == 1)
            #expect(logged.first?.nonce == verification.claims?.nonce)
            #expect(logged.first?.applicationUsername == token)
            #expect(logged.first?.channel == "retention")
            #expect(logged.first?.requestIdentifier == requestIdentifier)
            #expect(logged.first?.format == "jws")

            // Apple's retry: the same answer, no second signature.
            let again = try await fixture.ask(client, signed)
            #expect(again.status == .ok)
            #expect(try again.decode(RealtimeResponseBody.self) == answer)
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 1)

            // A new request is a new decision: signed again, and counted against the offer's cap (3).
            for _ in 0..<2 {
                let next = try await fixture.ask(client, try await fixture.request(originalTransactionId: original))
                #expect(try next.decode(RealtimeResponseBody.self).promotionalOffer != nil)
            }
            let capped = try await fixture.ask(client, try await fixture.request(originalTransactionId: original))
            #expect(try capped.decode(RealtimeResponseBody.self).message?.messageIdentifier == "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03")
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 3)
        }
        try await fixture.store.close()
    }

    @Test(
        "Apple's retry after the key that signed the stored offer was revoked: the fallback message, never the revoked key's signature",
        arguments: StoreBackend.available
    )
    func aRevokedKeysAnswerIsNotReplayed(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let token = UUID().uuidString.lowercased()
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
            let signed = try await fixture.request(originalTransactionId: original)
            let first = try await fixture.ask(client, signed).decode(RealtimeResponseBody.self)
            #expect(first.promotionalOffer?.signingKeyIdentifier == "TESTKEY001")
            // The leaked-key runbook: a new key active, the old one revoked.
            let replacement = try SigningKey.generate(keyIdentifier: "TESTKEY002")
            fixture.service.keys.replace(
                with: try KeyRing(
                    keys: [.init(key: fixture.key, source: "test"), .init(key: replacement, source: "test")],
                    activeKeyIdentifier: "TESTKEY002",
                    revokedKeyIdentifiers: ["TESTKEY001"]
                )
            )
            let retry = try await fixture.ask(client, signed)
            #expect(retry.status == .ok, "\(retry.text)")
            let answer = try retry.decode(RealtimeResponseBody.self)
            #expect(answer.promotionalOffer == nil)
            #expect(answer.message?.messageIdentifier == "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03")
            #expect(!retry.text.contains(try #require(first.promotionalOffer?.promotionalOfferSignatureV2)))
            // A new request is signed with the new key.
            let fresh = try await fixture.ask(client, try await fixture.request(originalTransactionId: original)).decode(RealtimeResponseBody.self)
            #expect(fresh.promotionalOffer?.signingKeyIdentifier == "TESTKEY002")
        }
        try await fixture.store.close()
    }

    @Test("signature: v1 answers a legacy signature over the appAccountToken, with the nonce and timestamp given", arguments: StoreBackend.available)
    func version1Signature(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let token = UUID().uuidString.lowercased()
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
            let response = try await fixture.ask(
                client,
                try await fixture.request(originalTransactionId: original, productIdentifier: RetentionFixture.weekly)
            )
            #expect(response.status == .ok, "\(response.text)")
            let offer = try #require(try response.decode(RealtimeResponseBody.self).promotionalOffer)
            #expect(offer.messageIdentifier == "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e04")
            #expect(offer.promotionalOfferSignatureV2 == nil)
            let v1 = try #require(offer.promotionalOfferSignatureV1)
            #expect(v1.appAccountToken == token)
            #expect(v1.productIdentifier == RetentionFixture.weekly)
            #expect(v1.offerIdentifier == "retention_v1")
            #expect(v1.keyIdentifier == "TESTKEY001")
            #expect(UUID(uuidString: v1.nonce) != nil && v1.nonce == v1.nonce.lowercased())
            #expect(abs(Double(v1.timestamp) / 1000 - Date().timeIntervalSince1970) < 60)
            let verification = fixture.service.verification.verifyLegacy(
                SignedLegacyOffer(
                    bundleIdentifier: fixture.bundle,
                    productIdentifier: v1.productIdentifier,
                    offerIdentifier: v1.offerIdentifier,
                    applicationUsername: token,
                    keyIdentifier: v1.keyIdentifier,
                    nonce: v1.nonce,
                    timestamp: v1.timestamp,
                    signature: v1.encodedSignature
                )
            )
            #expect(verification.valid, "\(verification.message ?? "")")
            let logged = try await fixture.store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle))
            #expect(logged.map(\.nonce) == [v1.nonce])
            #expect(logged.first?.format == "legacy")
        }
        try await fixture.store.close()
    }

    @Test("an active loyal customer gets the alternate product; a stranger the fallback; no entries is 404", arguments: StoreBackend.available)
    func alternateProductFallbackAndNoEntries(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            // Known without an appAccountToken (filed under the original transaction), renewed, auto-renew on.
            try await fixture.subscribe(client, token: nil, originalTransactionId: original, renewed: true, autoRenew: .on)
            let loyal = try await fixture.ask(client, try await fixture.request(originalTransactionId: original))
            #expect(loyal.status == .ok, "\(loyal.text)")
            #expect(
                try loyal.decode(RealtimeResponseBody.self)
                    == RealtimeResponseBody(
                        alternateProduct: RetentionAlternateProduct(
                            messageIdentifier: "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02",
                            productIdentifier: RetentionFixture.annual
                        )
                    )
            )

            let stranger = try await fixture.ask(client, try await fixture.request(originalTransactionId: Self.otid()))
            #expect(stranger.status == .ok)
            #expect(
                try stranger.decode(RealtimeResponseBody.self)
                    == RealtimeResponseBody(message: RetentionMessage(messageIdentifier: "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03"))
            )

            let none = try await fixture.ask(
                client,
                try await fixture.request(originalTransactionId: original, productIdentifier: RetentionFixture.plain)
            )
            #expect(none.status == .notFound)
            #expect(try none.decode(RefusalBody.self).error.code == "no_retention_answer")
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
        }
        try await fixture.store.close()
    }

    @Test("wrong appAppleId, a tampered payload and an untrusted chain are refused with 400 and sign nothing", arguments: StoreBackend.available)
    func refusals(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let token = UUID().uuidString.lowercased()
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
            func refused(_ payload: String, saying fragment: String) async throws {
                let response = try await fixture.ask(client, payload)
                #expect(response.status == .badRequest, "\(response.text)")
                let error = try response.decode(RefusalBody.self).error
                #expect(error.code == "invalid_signed_payload")
                #expect(error.message.contains(fragment), "\(error.message)")
            }
            try await refused(try await fixture.request(originalTransactionId: original, appAppleId: 987_654_321), saying: "appAppleId")
            let untrusted = TestJWSSigner(chain: try TestCertificateChain())
            try await refused(try await fixture.request(originalTransactionId: original, signer: untrusted), saying: "untrusted_root")
            // Tampered: the payload of another request under the first one's signature.
            let genuine = try await fixture.request(originalTransactionId: original).split(separator: ".")
            let other = try await fixture.request(originalTransactionId: Self.otid()).split(separator: ".")
            try await refused("\(genuine[0]).\(other[1]).\(genuine[2])", saying: "signature")
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
        }
        try await fixture.store.close()
    }

    @Test("20 concurrent deliveries of one request get one answer and one signature", arguments: StoreBackend.available)
    func concurrentRetriesSignOnce(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let token = UUID().uuidString.lowercased()
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
            let signed = try await fixture.request(originalTransactionId: original)
            let answers = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<20 { group.addTask { try await fixture.ask(client, signed).text } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(Set(answers).count == 1, "\(Set(answers))")
            #expect(answers.first?.contains("promotionalOfferSignatureV2") == true)
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 1)
        }
        try await fixture.store.close()
    }

    @Test(
        "V1 for a customer known without an appAccountToken: signed over an empty applicationUsername, no appAccountToken in the answer",
        arguments: StoreBackend.available
    )
    func version1WithoutToken(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let original = Self.otid()
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: nil, originalTransactionId: original, autoRenew: .off)
            let response = try await fixture.ask(
                client,
                try await fixture.request(originalTransactionId: original, productIdentifier: RetentionFixture.weekly)
            )
            let v1 = try #require(try response.decode(RealtimeResponseBody.self).promotionalOffer?.promotionalOfferSignatureV1, "\(response.text)")
            #expect(v1.appAccountToken == nil)
            #expect(!response.text.contains("appAccountToken"))
            let verification = fixture.service.verification.verifyLegacy(
                SignedLegacyOffer(
                    bundleIdentifier: fixture.bundle,
                    productIdentifier: v1.productIdentifier,
                    offerIdentifier: v1.offerIdentifier,
                    applicationUsername: "",
                    keyIdentifier: v1.keyIdentifier,
                    nonce: v1.nonce,
                    timestamp: v1.timestamp,
                    signature: v1.encodedSignature
                )
            )
            #expect(verification.valid, "\(verification.message ?? "")")
            // Recorded for the customer the notifications filed the subscription under, so caps count it.
            let logged = try await fixture.store.issuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle))
            #expect(logged.map(\.applicationUsername) == ["otid:\(original)"])
        }
        try await fixture.store.close()
    }

    @Test("past the deadline the fallback message is answered; without a fallback, 503 retention_timed_out")
    func deadline() async throws {
        for fallback in [true, false] {
            let fixture = try await RetentionFixture(.sqlite, deadline: .milliseconds(50), slowStore: .seconds(3), fallback: fallback)
            let token = UUID().uuidString.lowercased()
            let original = Self.otid()
            try await fixture.application.test(.router) { client in
                try await fixture.subscribe(client, token: token, originalTransactionId: original, autoRenew: .off)
                let started = ContinuousClock.now
                let response = try await fixture.ask(client, try await fixture.request(originalTransactionId: original))
                // The store grants the lock after 3 s; the deadline (50 ms) answers long before, even on busy cores.
                #expect(ContinuousClock.now - started < .milliseconds(2500))
                if fallback {
                    #expect(response.status == .ok, "\(response.text)")
                    #expect(
                        try response.decode(RealtimeResponseBody.self)
                            == RealtimeResponseBody(message: RetentionMessage(messageIdentifier: "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03"))
                    )
                } else {
                    #expect(response.status == .serviceUnavailable)
                    #expect(response.headers[.retryAfter] != nil)
                    #expect(try response.decode(RefusalBody.self).error.code == "retention_timed_out")
                }
            }
            // The decision made after the deadline was rolled back: no signature recorded, no answer stored.
            try await Task.sleep(for: .milliseconds(3500))
            #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
            try await fixture.store.close()
        }
    }

    @Test("retention entries are validated when the policy loads")
    func policyValidation() throws {
        func problem(_ entries: String) -> String? {
            // Entries written from column 0, placed under `retention:`.
            let retention = entries.split(separator: "\n").map { line -> String in
                var line = String(line)
                for (name, digit) in [("A", "1"), ("B", "2"), ("C", "3")] where line.hasSuffix("messageIdentifier: \(name)") {
                    line = line.replacingOccurrences(
                        of: "messageIdentifier: \(name)",
                        with: "messageIdentifier: 00000000-0000-4000-8000-00000000000\(digit)"
                    )
                }
                return "              " + line
            }.joined(separator: "\n")
            do {
                _ = try OfferPolicy(
                    text: """
                        apps:
                          - bundleIdentifier: com.example.app
                            products:
                              - productIdentifier: com.example.monthly
                                subscriptionGroupIdentifier: "1"
                                offers:
                                  - offerIdentifier: save
                                retention:
                        \(retention)
                              - productIdentifier: com.example.annual
                                subscriptionGroupIdentifier: "1"
                              - productIdentifier: com.example.other
                                subscriptionGroupIdentifier: "2"
                        """
                )
                return nil
            } catch {
                return error.message
            }
        }
        #expect(
            problem(
                """
                - promotionalOffer: save\n  messageIdentifier: A\n- alternateProduct: com.example.annual\n  messageIdentifier: B\n  rules: \
                [active-subscriber]\n- messageIdentifier: C
                """
            ) == nil
        )
        #expect(problem("- messageIdentifier: RM-THANKS-1")?.contains("must be the UUID of a message") == true)
        #expect(
            problem("- promotionalOffer: nope\n  messageIdentifier: A")?.contains("'nope' is not an offer of com.example.monthly; its offers: save")
                == true
        )
        #expect(problem("- alternateProduct: com.example.missing\n  messageIdentifier: A")?.contains("must be another product of this app") == true)
        #expect(problem("- alternateProduct: com.example.other\n  messageIdentifier: A")?.contains("same group") == true)
        #expect(problem("- messageIdentifier: A\n- messageIdentifier: B")?.contains("comes after the fallback") == true)
        #expect(problem("- messageIdentifier: A\n- promotionalOffer: save\n  messageIdentifier: B")?.contains("would never be chosen") == true)
        #expect(problem("- promotionalOffer: save\n  messageIdentifier: A\n  signature: v3")?.contains("v2 (the default) or v1") == true)
        #expect(problem("- promotionalOffer: save\n  alternateProduct: com.example.annual\n  messageIdentifier: A")?.contains("not both") == true)
        #expect(problem("- promotionalOffer: save")?.contains("'messageIdentifier' is required") == true)
        #expect(problem("- messageIdentifier: A\n  signature: v1")?.contains("promotionalOffer entries only") == true)
    }
}
