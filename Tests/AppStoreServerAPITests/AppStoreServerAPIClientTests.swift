import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import OfferModel
import Testing

/// The client against a local fake of Apple's API that checks the token and answers with data signed by a test chain.
@Suite struct AppStoreServerAPIClientTests {
    let fixture: Fixture

    init() throws {
        fixture = try Fixture()
    }

    // MARK: - Decoding and folding

    @Test func statusesOfALapsedSubscriberDecodeAndFoldIntoFacts() async throws {
        let fixture = self.fixture
        let purchased = Date().addingTimeInterval(-90 * 86_400)
        var introductory = Fixture.transaction(purchaseDate: purchased)
        introductory.offerType = .introductoryOffer
        var renewal = Fixture.transaction(
            transactionId: "1000000000000002",
            purchaseDate: purchased.addingTimeInterval(30 * 86_400),
            expiresDate: Date().addingTimeInterval(-30 * 86_400)
        )
        renewal.originalPurchaseDate = purchased.appStoreMilliseconds
        renewal.transactionReason = .renewal
        var renewalInfo = TestPayloads.renewalInfo(for: renewal, autoRenewStatus: .off)
        renewalInfo.expirationIntent = .customerCancelled
        let statuses = try await fixture.statuses(status: .expired, transaction: renewal, renewalInfo: renewalInfo)
        let history = try await fixture.historyPage(transactions: [introductory, renewal], revision: "r1", hasMore: false)
        let fake = fixture.fake { request in request.endpoint == .statuses ? statuses : history }

        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let fetched = try await client.facts(forTransaction: "1000000000000002")
            #expect(fetched.environment == .production)
            #expect(fetched.statuses.lastTransactions.count == 1)
            #expect(fetched.statuses.lastTransactions.first?.status == .expired)
            #expect(fetched.statuses.lastTransactions.first?.renewalInfo?.autoRenewStatus == .off)
            #expect(fetched.history?.transactions.count == 2)
            #expect(fetched.history?.isComplete == true)

            let key = CustomerKey(bundleIdentifier: TestPayloads.bundleIdentifier, applicationUsername: "customer-1")
            let facts = fetched.facts(for: key)
            let subscription = try #require(facts.subscription(inGroup: "21000001"))
            #expect(subscription.state == .expired)
            #expect(subscription.autoRenewEnabled == false)
            #expect(subscription.expirationIntent == 1)
            #expect(subscription.hadIntroductoryOffer)
            #expect(subscription.renewalCount == 1)
            #expect(subscription.originalTransactionId == "1000000000000001")
            #expect(subscription.originalPurchaseDate == Date(appStoreMilliseconds: purchased.appStoreMilliseconds))
            #expect(facts.storefront == "USA")
        }
    }

    @Test func historyPagesAreFollowedByRevisionAndMerged() async throws {
        let fixture = self.fixture
        let base = Date().addingTimeInterval(-200 * 86_400)
        let transactions = (0..<5).map { index in
            Fixture.transaction(transactionId: "100000000000010\(index)", purchaseDate: base.addingTimeInterval(Double(index) * 30 * 86_400))
        }
        // Page 2 repeats the last transaction of page 1 (updated during pagination): merged once.
        let pages =
            [
                nil: try await fixture.historyPage(transactions: Array(transactions[0..<2]), revision: "rev-1", hasMore: true),
                "rev-1": try await fixture.historyPage(transactions: Array(transactions[1..<4]), revision: "rev-2", hasMore: true),
                "rev-2": try await fixture.historyPage(transactions: [transactions[4]], revision: "rev-3", hasMore: false),
            ] as [String?: FakeResponse]
        let fake = fixture.fake { request in
            #expect(request.query["productType"] == "AUTO_RENEWABLE")
            return pages[request.query["revision"]] ?? FakeResponse(status: .badRequest)
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let history = try await client.transactionHistory(forTransaction: "1000000000000001")
            #expect(history.transactions.compactMap(\.transactionId) == transactions.compactMap(\.transactionId))
            #expect(history.isComplete)
            #expect(await fake.ledger.revisions == [nil, "rev-1", "rev-2"])
        }
    }

    @Test func historyStopsAtThePageLimit() async throws {
        let fixture = self.fixture
        let page = try await fixture.historyPage(transactions: [Fixture.transaction()], revision: "again", hasMore: true)
        let fake = fixture.fake { request in
            // A new revision each time, so only the page limit stops the reading.
            var next = page
            next.body = next.body.replacingOccurrences(of: "\"again\"", with: "\"rev-\(UUID().uuidString)\"")
            return next
        }
        try await fake.run { port in
            var configuration = fixture.configuration(port: port)
            configuration.maximumHistoryPages = 3
            let history = try await fixture.client(configuration).transactionHistory(forTransaction: "1000000000000001")
            #expect(history.isComplete == false)
            #expect(history.transactions.count == 1)
            #expect(await fake.ledger.count("production", .history) == 3)
        }
    }

    // MARK: - Resilience

    @Test(arguments: ["unix-milliseconds", "seconds"])
    func rateLimitedAnswerIsRetriedAfterRetryAfter(form: String) async throws {
        let fixture = self.fixture
        let statuses = try await fixture.statuses()
        let fake = fixture.fake { _ in statuses }
        let counter = Counter()
        let limited = fixture.fake { request in
            guard await counter.next() > 1 else {
                let retryAfter = form == "seconds" ? "1" : String(Int64(Date().timeIntervalSince1970 * 1000) + 400)
                return .error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", retryAfter)])
            }
            return try await fake.respond(request)
        }
        try await limited.run { port in
            let client = try fixture.client(fixture.configuration(port: port, timeout: .seconds(10)))  // about the wait, not the budget
            let started = ContinuousClock.now
            let answer = try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            let elapsed = ContinuousClock.now - started
            #expect(answer.lastTransactions.count == 1)
            #expect(await limited.ledger.count("production", .statuses) == 2)
            #expect(elapsed >= .milliseconds(300))
        }
    }

    @Test func rateLimitedBeyondTheBudgetFailsAtOnce() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in
            .error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", String(Int(Date().timeIntervalSince1970 * 1000) + 60_000))])
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, timeout: .seconds(10)))
            let started = ContinuousClock.now
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .rateLimited)
            // At once: not after the 60 s Retry-After, nor after the 10 s budget (loose bound: 2 busy cores).
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(await fake.ledger.count("production", .statuses) == 1)
        }
    }

    @Test func serverErrorsAreRetried() async throws {
        let fixture = self.fixture
        let statuses = try await fixture.statuses()
        let counter = Counter()
        let fake = fixture.fake { _ in
            switch await counter.next() {
            case 1: .error(.internalServerError, code: 5_000_001)
            case 2: FakeResponse(status: .serviceUnavailable, body: "<html>down</html>")
            default: statuses
            }
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let answer = try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            #expect(answer.lastTransactions.count == 1)
            #expect(await fake.ledger.count("production", .statuses) == 3)
        }
    }

    @Test func serverErrorsUntilRetriesRunOutMeanUnavailable() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in .error(.internalServerError, code: 5_000_000) }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .appStoreUnavailable)
            #expect(await fake.ledger.count("production", .statuses) == 3)
        }
    }

    @Test func aHangingAppStoreIsUnavailableWithinTheTimeout() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in FakeResponse(hang: true) }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, timeout: .milliseconds(500)))
            let started = ContinuousClock.now
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.facts(forTransaction: "1000000000000001")
            }
            let elapsed = ContinuousClock.now - started
            #expect(error?.code == .appStoreUnavailable)
            #expect(elapsed >= .milliseconds(450))
            #expect(elapsed < .milliseconds(500) + .seconds(3))  // the fake never answers; loose: 2 busy cores, tests in parallel
        }
    }

    @Test func concurrentRequestsForOneTransactionShareOneCall() async throws {
        let fixture = self.fixture
        var statuses = try await fixture.statuses()
        statuses.delay = .milliseconds(200)
        var history = try await fixture.historyPage(transactions: [Fixture.transaction()], revision: "r", hasMore: false)
        history.delay = .milliseconds(100)
        let fake = fixture.fake { [statuses, history] request in request.endpoint == .statuses ? statuses : history }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let answers = try await withThrowingTaskGroup(of: FetchedSubscriptionFacts.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await client.facts(forTransaction: "1000000000000001") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.count == 20)
            #expect(Set(answers.map(\.statuses)).count == 1)
            #expect(await fake.ledger.count("production", .statuses) == 1)
            #expect(await fake.ledger.count("production", .history) == 1)
        }
    }

    @Test func aSecondRequestWithinTheTimeToLiveIsServedFromTheCache() async throws {
        let fixture = self.fixture
        let statuses = try await fixture.statuses()
        let fake = fixture.fake { _ in statuses }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, cacheTimeToLive: .seconds(30)))
            let first = try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            let second = try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            #expect(first == second)
            #expect(await fake.ledger.count("production", .statuses) == 1)

            let expiring = try fixture.client(fixture.configuration(port: port, cacheTimeToLive: .milliseconds(100)))
            _ = try await expiring.subscriptionStatuses(forTransaction: "1000000000000001")
            try await Task.sleep(for: .milliseconds(200))
            _ = try await expiring.subscriptionStatuses(forTransaction: "1000000000000001")
            #expect(await fake.ledger.count("production", .statuses) == 3)
        }
    }

    @Test func oneTokenIsReusedAcrossRequests() async throws {
        let fixture = self.fixture
        let statuses = try await fixture.statuses()
        let fake = fixture.fake { _ in statuses }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, cacheTimeToLive: .zero))
            for _ in 0..<3 { _ = try await client.subscriptionStatuses(forTransaction: "1000000000000001") }
            #expect(await fake.ledger.count("production", .statuses) == 3)
            #expect(await fake.ledger.tokens.count == 1)
        }
    }

    // MARK: - Verification

    @Test func anAnswerSignedByAnUntrustedChainIsRefused() async throws {
        let fixture = self.fixture
        let forger = TestJWSSigner(chain: try TestCertificateChain())
        let forged = try await fixture.statuses(signer: forger)
        let fake = fixture.fake { _ in forged }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.facts(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test func oneForgedItemRefusesTheWholeAnswer() async throws {
        let fixture = self.fixture
        let forger = TestJWSSigner(chain: try TestCertificateChain())
        let forged = try await fixture.statuses(renewalSigner: forger)
        let fake = fixture.fake { _ in forged }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test func sandboxDataFromTheProductionHostIsRefused() async throws {
        let fixture = self.fixture
        // Signed and trusted, but a Sandbox transaction inside a Production answer.
        let mixed = try await fixture.statuses(.production, transaction: Fixture.transaction(.sandbox))
        let fake = fixture.fake { _ in mixed }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, environments: [.production, .sandbox]))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test func anAnswerLargerThanTheLimitIsRefused() async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in FakeResponse(body: "[" + String(repeating: "0,", count: 300_000) + "0]") }
        try await fake.run { port in
            var configuration = fixture.configuration(port: port)
            configuration.maximumResponseBytes = 64 * 1024
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await fixture.client(configuration).subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    @Test(arguments: [
        "not json", "{}", #"{"environment":"Production","bundleId":"com.other.app","data":[]}"#,
        #"{"environment":"Production","bundleId":"com.example.offersigner","data":[{"lastTransactions":[{"status":1}]}]}"#,
        #"""
        {"environment":"Production","bundleId":"com.example.offersigner","data":[{"lastTransactions":[{"status":1,\#
        "signedTransactionInfo":"a.b.c"}]}]}
        """#,
    ])
    func hostileAnswersAreRefusedWithoutTrapping(body: String) async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in FakeResponse(body: body) }
        try await fake.run { port in
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await fixture.client(fixture.configuration(port: port)).subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .invalidResponse)
        }
    }

    // MARK: - Environments

    @Test func productionNotFoundFallsBackToSandbox() async throws {
        let fixture = self.fixture
        let sandbox = try await fixture.statuses(.sandbox, transaction: Fixture.transaction(.sandbox))
        let sandboxHistory = try await fixture.historyPage(.sandbox, transactions: [Fixture.transaction(.sandbox)], revision: "r", hasMore: false)
        let fake = fixture.fake { request in
            guard request.environment == "sandbox" else { return .error(.notFound, code: 4_040_010) }
            return request.endpoint == .statuses ? sandbox : sandboxHistory
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, environments: [.production, .sandbox]))
            let fetched = try await client.facts(forTransaction: "1000000000000001")
            #expect(fetched.environment == .sandbox)
            #expect(await fake.ledger.count("production", .statuses) == 1)
            #expect(await fake.ledger.count("sandbox", .statuses) == 1)
            // The history is asked where the statuses were found.
            #expect(await fake.ledger.count("production", .history) == 0)
            #expect(await fake.ledger.count("sandbox", .history) == 1)

            let productionOnly = try fixture.client(fixture.configuration(port: port, environments: [.production]))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await productionOnly.facts(forTransaction: "1000000000000009")
            }
            #expect(error?.code == .notFound)
            #expect(await fake.ledger.count("sandbox", .statuses) == 1)
        }
    }

    // MARK: - Authentication and input

    @Test func aKeyTheAppStoreDoesNotKnowIsUnauthorized() async throws {
        let fixture = self.fixture
        let statuses = try await fixture.statuses()
        let fake = fixture.fake { _ in statuses }
        try await fake.run { port in
            let wrongKey = try fixture.client(fixture.configuration(port: port, key: P256.Signing.PrivateKey()))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await wrongKey.subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(error?.code == .unauthorized)

            var wrongIssuer = fixture.configuration(port: port)
            wrongIssuer.issuerId = "00000000-0000-0000-0000-000000000000"
            let secondError = await #expect(throws: AppStoreServerAPIError.self) {
                try await fixture.client(wrongIssuer).subscriptionStatuses(forTransaction: "1000000000000001")
            }
            #expect(secondError?.code == .unauthorized)
            #expect(await fake.ledger.rejectedTokens == 2)  // not retried
            #expect(await fake.ledger.total == 0)
        }
    }

    @Test(arguments: ["", "abc", "12/../34", "123?x=1", "1 2", "-1", String(repeating: "1", count: 33), "١٢٣", "12%2F3"])
    func invalidTransactionIdentifiersAreRefusedBeforeAnyRequest(transactionId: String) async throws {
        let fixture = self.fixture
        let fake = fixture.fake { _ in FakeResponse(status: .internalServerError) }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.facts(forTransaction: transactionId)
            }
            #expect(error?.code == .invalidTransactionIdentifier)
            #expect(await fake.ledger.total == 0)
            #expect(await fake.ledger.rejectedTokens == 0)
        }
    }

    @Test func messagesNameNoTransactionTokenOrType() async throws {
        let fixture = self.fixture
        let transactionId = "1234567890123456"
        let fake = fixture.fake { request in
            request.environment == "production" ? .error(.notFound, code: 4_040_010) : FakeResponse(status: .internalServerError)
        }
        try await fake.run { port in
            let client = try fixture.client(fixture.configuration(port: port, environments: [.production, .sandbox]))
            let error = await #expect(throws: AppStoreServerAPIError.self) {
                try await client.facts(forTransaction: transactionId)
            }
            let message = try #require(error).message
            #expect(!message.contains(transactionId))
            #expect(!message.contains("Bearer"))
            #expect(!message.contains("AppStoreServerAPI"))
            #expect(!message.contains("Error"))
        }
    }

    @Test func anUnreadableKeyIsAConfigurationError() throws {
        var configuration = fixture.configuration(port: 1)
        configuration.privateKeyPEM = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END PRIVATE KEY-----"
        let error = #expect(throws: AppStoreServerAPIError.self) { try fixture.client(configuration) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.message.contains("c2VjcmV0") == false)

        var dumped = ""
        dump(configuration, to: &dumped)
        #expect(!dumped.contains("c2VjcmV0") && !"\(configuration)".contains("c2VjcmV0") && !String(reflecting: configuration).contains("c2VjcmV0"))

        var xcode = fixture.configuration(port: 1)
        xcode.environments = [.xcode]
        #expect(throws: AppStoreServerAPIError.self) { try fixture.client(xcode) }
    }
}

/// Counts calls across the fake's concurrent handlers.
actor Counter {
    private var value = 0

    func next() -> Int {
        value += 1
        return value
    }
}
