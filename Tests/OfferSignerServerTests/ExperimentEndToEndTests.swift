import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfferEligibility
import OfferExperiments
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

@testable import OfferApplication

/// An experiment from exposure to result, through the service's own endpoints on both stores: customers exposed
/// weeks ago (their exposures written with that date) and days ago, their purchases, renewals and refunds delivered
/// as Apple-shaped notifications signed by the test chain, twice and shuffled; `GET /admin/experiments/{id}` counts
/// every metric exactly over the mature customers and ignores what falls outside each window or after the end.
@Suite struct ExperimentEndToEndTests {
    static let adminToken = "carol-token-0123456789abcdef"
    static let day: TimeInterval = 86_400

    static func milliseconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970 * 1_000) }

    /// A service for a policy, with the notification ingestor trusting the test chain.
    struct Fixture {
        let store: any OfferStore
        let service: SigningPipeline
        let signer: TestJWSSigner
        let bundle: String
        var base = Int.random(in: 5_000_000_000_000...5_999_999_999_999) * 100  // transactions are unique per store
        var deliveries: [String] = []

        init(backend: StoreBackend, bundle: String, policy: OfferPolicy) async throws {
            store = try await backend.open()
            var options = TestCertificateChain.Options()
            options.leafValidity = Date().addingTimeInterval(-30 * 86_400)...Date().addingTimeInterval(30 * 86_400)
            signer = TestJWSSigner(chain: try TestCertificateChain(options))
            let verifier = try SignedDataVerifier(bundleIdentifier: bundle, environments: [.sandbox], trustedRoots: [signer.chain.root])
            let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: Logger(label: "test"), readableTokens: true)
            service = SigningPipeline(
                apps: [],
                keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
                policy: policy,
                store: store,
                notifications: ingestor
            )
            self.bundle = bundle
        }

        /// A purchase (`offer`: a promotional offer) or a renewal of subscription `index` of `customer`, paid `price`.
        mutating func transaction(
            _ customer: String,
            _ index: Int,
            renewal: Int = 0,
            at: Date,
            days: Double,
            price: Int64 = 9_990,
            currency: String = "USD",
            offer: String? = nil,
            refundedAt: Date? = nil
        ) async throws {
            let original = "\(base + index)"
            var transaction = TestPayloads.transaction(
                originalTransactionId: original,
                transactionId: renewal == 0 ? original : "\(original)\(renewal)",
                appAccountToken: customer,
                purchaseDate: at,
                expiresDate: at + days * ExperimentEndToEndTests.day,
                bundleIdentifier: bundle
            )
            (transaction.price, transaction.currency) = (price, currency)
            if let offer { (transaction.offerType, transaction.offerIdentifier) = (.promotionalOffer, offer) }
            if renewal > 0 { transaction.transactionReason = .renewal }
            let info = TestPayloads.renewalInfo(for: transaction)
            let type: NotificationType = renewal > 0 ? .didRenew : .subscribed
            deliveries.append(
                try await signer.signNotification(
                    type,
                    subtype: renewal > 0 ? nil : .resubscribe,
                    transaction: transaction,
                    renewalInfo: info,
                    bundleIdentifier: bundle
                )
            )
            if let refundedAt {
                transaction.revocationDate = refundedAt.appStoreMilliseconds
                transaction.revocationReason = .other
                deliveries.append(try await signer.signNotification(.refund, transaction: transaction, renewalInfo: info, bundleIdentifier: bundle))
            }
        }

        /// Delivers every notification twice, shuffled, and reads the report over HTTP.
        func report(_ id: String, client: some TestClientProtocol) async throws -> ExperimentReport {
            for payload in deliveries.shuffled() + deliveries.shuffled() {
                #expect(try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}").status == .ok)
            }
            let answer = try await client.execute(uri: "/admin/experiments/\(id)", method: .get, headers: [.authorization: "Bearer \(adminToken)"])
            #expect(answer.status == .ok, "\(answer.text)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            return try decoder.decode(ExperimentReport.self, from: Data(answer.body.readableBytesView))
        }

        func expose(_ experiment: OfferPolicy.Experiment, _ customer: String, at: Date) async throws {
            let key = CustomerKey(bundleIdentifier: bundle, applicationUsername: customer)
            try await store.recordExposure(
                ExperimentExposure(
                    experimentIdentifier: experiment.identifier,
                    customer: key,
                    variant: experiment.variant(for: key).name,
                    exposedAt: at
                )
            )
        }

        func router() throws -> Router<OfferSignerRequestContext> {
            buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: nil),
                adminTokens: try BearerTokens(parsing: "carol:\(ExperimentEndToEndTests.adminToken)")
            )
        }
    }

    static func policy(bundle: String, id: String, settings: String) throws -> OfferPolicy {
        try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    products:
                      - productIdentifier: \(TestPayloads.productIdentifier)
                        offers:
                          - offerIdentifier: half_off
                experiments:
                  - id: \(id)
                    productIdentifier: \(TestPayloads.productIdentifier)
                \(settings)
                    variants:
                      - { name: half, offerIdentifier: half_off, weight: 1 }
                      - { name: none, holdout: true, weight: 1 }
                """
        )
    }

    @Test(
        "converted, retained, realized revenue, redeemed and renewed are exact over the mature customers; the maturing are counted apart",
        arguments: StoreBackend.available
    )
    func matureMetrics(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)")
        let now = Date()
        let policy = try Self.policy(
            bundle: bundle,
            id: id,
            settings: """
                    metric: converted
                    windowDays: 30
                    end: \(ISO8601DateFormatter().string(from: now + 10 * Self.day))
                """
        )
        let experiment = try #require(policy.experiment(id))
        var fixture = try await Fixture(backend: backend, bundle: bundle, policy: policy)
        let customers = (0..<60).map { "e2e-\($0)" }
        let isHeld: @Sendable (String) -> Bool = { experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: $0)).isHoldout }
        let (mature, maturing) = (Array(customers.prefix(44)), Array(customers.dropFirst(44)))
        let (matureHalf, matureHeld) = (mature.filter { !isHeld($0) }, mature.filter(isHeld))
        try #require(matureHalf.count >= 5 && matureHeld.count >= 5 && maturing.contains { !isHeld($0) })
        // Exposed 40 days ago (mature: their 30 days have passed) and 5 days ago (maturing).
        let exposedAt = now - 40 * Self.day
        for customer in mature { try await fixture.expose(experiment, customer, at: exposedAt) }
        for customer in maturing { try await fixture.expose(experiment, customer, at: now - 5 * Self.day) }
        // Five of the half variant redeem a week at 4.99 USD on day 1; two renew at 9.99 on day 8 (entitled to day
        // 38), one is refunded on day 3, two lapse after their week.
        for (index, customer) in matureHalf.prefix(5).enumerated() {
            try await fixture.transaction(
                customer,
                index,
                at: exposedAt + Self.day,
                days: 7,
                price: 4_990,
                offer: "half_off",
                refundedAt: index == 2 ? exposedAt + 3 * Self.day : nil
            )
            if index < 2 { try await fixture.transaction(customer, index, renewal: 1, at: exposedAt + 8 * Self.day, days: 30) }
        }
        // Four of the holdout subscribe at full price on day 2 (one in euros); one only on day 35, after its window.
        for (index, customer) in matureHeld.prefix(5).enumerated() {
            try await fixture.transaction(
                customer,
                10 + index,
                at: exposedAt + (index == 4 ? 35 : 2) * Self.day,
                days: 30,
                price: index == 3 ? 8_990 : 9_990,
                currency: index == 3 ? "EUR" : "USD"
            )
        }
        // A maturing customer's purchase counts nowhere yet.
        try await fixture.transaction(try #require(maturing.first { !isHeld($0) }), 20, at: now - 4 * Self.day, days: 30)
        let delivered = fixture
        try await Application(router: try delivered.router(), logger: Logger(label: "test")).test(.router) { client in
            for customer in customers {  // asked again now: the first exposure stands
                #expect(try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"\#(customer)"}"#).status == .ok)
            }
            let report = try await delivered.report(id, client: client)
            let byName = Dictionary(uniqueKeysWithValues: report.variants.map { ($0.name, $0) })
            let (half, none) = (try #require(byName["half"]), try #require(byName["none"]))
            #expect(half.exposed == customers.count(where: { !isHeld($0) }) && none.exposed == customers.count(where: isHeld))
            #expect(half.mature == matureHalf.count && none.mature == matureHeld.count)
            #expect(half.maturing + none.maturing == maturing.count)
            #expect(half.redeemed == 5 && half.renewedAfterOffer == 2 && half.converted == 4 && half.retained == 2)
            #expect(half.revenue.map(\.currency) == ["USD"] && half.revenue.map(\.milliunits) == [2 * (4_990 + 9_990) + 2 * 4_990])
            #expect(none.redeemed == 0 && none.converted == 4 && none.retained == 4)
            #expect(none.revenue.map(\.currency) == ["EUR", "USD"] && none.revenue.map(\.milliunits) == [8_990, 3 * 9_990])
            #expect(half.rate?.estimate == 4.0 / Double(matureHalf.count))
            #expect(report.reference == "none" && report.readable && report.correction == "Bonferroni" && report.windowDays == 30)
            #expect(report.comparisons.count == 1 && report.comparisons.first?.variant == "half")
            let unknown = try await client.execute(
                uri: "/admin/experiments/nope",
                method: .get,
                headers: [.authorization: "Bearer \(Self.adminToken)"]
            )
            #expect(unknown.status == .notFound)
            let list = try await client.execute(uri: "/admin/experiments", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(list.text.contains("\"exposed\":\(customers.count)"))
        }
        try await fixture.store.close()
    }

    @Test(
        "after the end: redemptions past each window and the end plus the window are ignored, exposures after the end are not counted",
        arguments: StoreBackend.available
    )
    func afterTheEnd(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)")
        let now = Date()
        let (start, end) = (now - 100 * Self.day, now - 40 * Self.day)
        let formatter = ISO8601DateFormatter()
        let policy = try Self.policy(
            bundle: bundle,
            id: id,
            settings: """
                    windowDays: 20
                    start: \(formatter.string(from: start))
                    end: \(formatter.string(from: end))
                """
        )
        let experiment = try #require(policy.experiment(id))
        var fixture = try await Fixture(backend: backend, bundle: bundle, policy: policy)
        let customers = (0..<40).map { "end-\($0)" }
        let isHeld: @Sendable (String) -> Bool = { experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: $0)).isHoldout }
        let exposedAt = end - 10 * Self.day
        let (exposed, late) = (Array(customers.prefix(36)), Array(customers.dropFirst(36)))
        for customer in exposed { try await fixture.expose(experiment, customer, at: exposedAt) }
        for customer in late { try await fixture.expose(experiment, customer, at: end + Self.day) }  // after the end: not counted
        let (half, held) = (exposed.filter { !isHeld($0) }, exposed.filter(isHeld))
        try #require(half.count >= 3 && held.count >= 7)
        // Within the window: two of half and three of the holdout (a leak) redeem on day 5.
        for (index, customer) in half.prefix(2).enumerated() {
            try await fixture.transaction(customer, index, at: exposedAt + 5 * Self.day, days: 30, price: 4_990, offer: "half_off")
        }
        for (index, customer) in held.prefix(3).enumerated() {
            try await fixture.transaction(customer, 10 + index, at: exposedAt + 5 * Self.day, days: 30, price: 4_990, offer: "half_off")
        }
        // Past the window: one of half on day 25 (before the end plus the window), four of the holdout 10 days ago
        // (after the end plus the window), and the late customers.
        try await fixture.transaction(half[2], 2, at: exposedAt + 25 * Self.day, days: 30, price: 4_990, offer: "half_off")
        for (index, customer) in held.dropFirst(3).prefix(4).enumerated() {
            try await fixture.transaction(customer, 20 + index, at: now - 10 * Self.day, days: 30, price: 4_990, offer: "half_off")
        }
        for (index, customer) in late.enumerated() {
            try await fixture.transaction(customer, 30 + index, at: end + 2 * Self.day, days: 30, price: 4_990, offer: "half_off")
        }
        let delivered = fixture
        try await Application(router: try delivered.router(), logger: Logger(label: "test")).test(.router) { client in
            let report = try await delivered.report(id, client: client)
            let byName = Dictionary(uniqueKeysWithValues: report.variants.map { ($0.name, $0) })
            #expect(byName["half"]?.exposed == half.count && byName["none"]?.exposed == held.count)
            #expect(byName["half"]?.mature == half.count && byName["none"]?.mature == held.count)
            #expect(byName["half"]?.redeemed == 2 && byName["none"]?.redeemed == 3)
            #expect(byName["half"]?.converted == 2 && byName["none"]?.converted == 3)
            #expect(byName["none"]?.revenue.map(\.milliunits) == [3 * 4_990])
            #expect(!report.running && report.readable)
        }
        try await fixture.store.close()
    }

    @Test(
        "revenue compared: each currency's sum, payers and difference per mature customer exact over HTTP, the interval from the store's squares",
        arguments: StoreBackend.available
    )
    func revenueCompared(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)")
        let now = Date()
        let policy = try Self.policy(
            bundle: bundle,
            id: id,
            settings: """
                    metric: revenue
                    windowDays: 30
                """
        )
        let experiment = try #require(policy.experiment(id))
        var fixture = try await Fixture(backend: backend, bundle: bundle, policy: policy)
        let customers = (0..<40).map { "rev-\($0)" }
        let isHeld: @Sendable (String) -> Bool = { experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: $0)).isHoldout }
        let exposedAt = now - 40 * Self.day
        for customer in customers { try await fixture.expose(experiment, customer, at: exposedAt) }
        let (half, held) = (customers.filter { !isHeld($0) }, customers.filter(isHeld))
        try #require(half.count >= 6 && held.count >= 5)
        // Half: four pay 4.99 on day 1 and renew at 9.99 on day 8 (14.98 each); a fifth is refunded on day 3; a sixth
        // renews only on day 35, past the window (its 4.99 counts).
        for (index, customer) in half.prefix(6).enumerated() {
            try await fixture.transaction(
                customer,
                index,
                at: exposedAt + Self.day,
                days: 7,
                price: 4_990,
                offer: "half_off",
                refundedAt: index == 4 ? exposedAt + 3 * Self.day : nil
            )
            if index < 4 { try await fixture.transaction(customer, index, renewal: 1, at: exposedAt + 8 * Self.day, days: 30) }
            if index == 5 { try await fixture.transaction(customer, index, renewal: 1, at: exposedAt + 35 * Self.day, days: 30) }
        }
        // The holdout: three pay 9.99 USD at full price on day 2, one 8.99 EUR.
        for (index, customer) in held.prefix(4).enumerated() {
            try await fixture.transaction(
                customer,
                10 + index,
                at: exposedAt + 2 * Self.day,
                days: 30,
                price: index == 3 ? 8_990 : 9_990,
                currency: index == 3 ? "EUR" : "USD"
            )
        }
        let delivered = fixture
        try await Application(router: try delivered.router(), logger: Logger(label: "test")).test(.router) { client in
            let report = try await delivered.report(id, client: client)
            let byName = Dictionary(uniqueKeysWithValues: report.variants.map { ($0.name, $0) })
            let (halfVariant, none) = (try #require(byName["half"]), try #require(byName["none"]))
            #expect(halfVariant.mature == half.count && none.mature == held.count)
            let halfUSD = 4 * (4_990 + 9_990) + 4_990
            #expect(halfVariant.revenue.map(\.currency) == ["USD"] && halfVariant.revenue.map(\.milliunits) == [Int64(halfUSD)])
            #expect(halfVariant.revenue.map(\.payers) == [5])
            #expect(none.revenue.map(\.currency) == ["EUR", "USD"] && none.revenue.map(\.milliunits) == [8_990, 3 * 9_990])
            #expect(none.revenue.map(\.payers) == [1, 3] && none.revenue.allSatisfy { $0.difference == nil })
            // Two currencies, one pair: each comparison at 1 - 0.05/2.
            #expect(report.comparisons.map(\.currency) == ["EUR", "USD"])
            #expect(report.comparisons.allSatisfy { $0.variant == "half" && $0.against == "none" })
            #expect(report.comparisonConfidenceLevel == 1 - 0.05 / 2 && report.readable)
            let usd = try #require(report.comparisons.last)
            let expectedUSD = Double(halfUSD) / Double(half.count) - Double(3 * 9_990) / Double(held.count)
            #expect(usd.difference.estimate == expectedUSD && halfVariant.revenue.first?.difference == usd.difference)
            // The interval as the statistics compute it from the exact sums: the store's squares and largest are right.
            let design = try SequentialTestDesign(planningSampleSize: experiment.plannedCustomers, alpha: 0.05 / 2)
            let halfSquares = 4.0 * 14_980 * 14_980 + 4_990.0 * 4_990
            let interval = AlwaysValidInterval.meanDifference(
                try RevenueSample(customers: half.count, sum: Double(halfUSD), sumOfSquares: halfSquares, largest: 14_980),
                minus: try RevenueSample(customers: held.count, sum: 3 * 9_990, sumOfSquares: 3.0 * 9_990 * 9_990, largest: 9_990),
                design: design
            )
            #expect(abs(usd.difference.lower - interval.lower) <= 1e-9 * abs(interval.lower))
            #expect(abs(usd.difference.upper - interval.upper) <= 1e-9 * abs(interval.upper))
            let eur = try #require(report.comparisons.first)
            #expect(eur.difference.estimate == -8_990 / Double(held.count) && eur.summary.contains("revenue in EUR"))
        }
        try await fixture.store.close()
    }

    @Test("subscription transactions are purged by purchase date, and a report no longer reads them", arguments: StoreBackend.available)
    func purgeTransactions(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.purge-\(suffix)", "purge-\(suffix)")
        let store = try await backend.open()
        // Dates in 1995 and 1997, older than anything another test (sharing the database) records.
        let (old, kept) = (Date(timeIntervalSince1970: 800_000_000), Date(timeIntervalSince1970: 860_000_000))
        let customer = CustomerKey(bundleIdentifier: bundle, applicationUsername: "purge-customer")
        try await store.recordExposure(ExperimentExposure(experimentIdentifier: id, customer: customer, variant: "a", exposedAt: kept))
        let base = Int.random(in: 5_000_000_000_000...5_999_999_999_999) * 100
        for (index, at) in [old, kept + Self.day].enumerated() {
            try await store.recordTransaction(
                SubscriptionTransaction(
                    environment: "Sandbox",
                    transactionId: "\(base + index)",
                    originalTransactionId: "\(base)",
                    customer: customer,
                    productIdentifier: TestPayloads.productIdentifier,
                    subscriptionGroupIdentifier: "group-\(suffix)",
                    price: 9_990,
                    currency: "USD",
                    purchaseDate: Self.milliseconds(at),
                    expiresDate: Self.milliseconds(at + 30 * Self.day),
                    revocationDate: nil
                )
            )
        }
        let query = ExperimentOutcomeQuery(
            experimentIdentifier: id,
            bundleIdentifier: bundle,
            productIdentifier: TestPayloads.productIdentifier,
            offers: [:],
            window: Int64(30 * Self.day * 1_000),
            matureAt: Self.milliseconds(Date()),
            exposedBefore: nil
        )
        #expect(try await store.experimentOutcomes(query)["a"]?.revenue == ["USD": 9_990])
        // At least this test's: the database is shared, and another test may hold older (hostile) dates.
        #expect(try await store.purgeSubscriptionTransactions(purchasedBefore: old + Self.day) >= 1)
        #expect(try await store.experimentOutcomes(query)["a"]?.revenue == ["USD": 9_990])
        #expect(try await store.purgeSubscriptionTransactions(purchasedBefore: kept + 2 * Self.day) >= 1)
        #expect(try await store.experimentOutcomes(query)["a"]?.revenue == [:])
        #expect(try await store.experimentOutcomes(query)["a"]?.mature == 1)
        try await store.close()
    }

    @Test("the scheduled purge deletes subscription transactions purchased more than 800 days ago and keeps younger ones (a store of its own)")
    func scheduledPurgeCoversTransactions() async throws {
        // SQLite in memory: the purge deletes by age across the whole table, which a shared database's other tests use.
        let store = try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
        let customer = CustomerKey(bundleIdentifier: "com.example.purge", applicationUsername: "purge-customer")
        let now = Date()
        for (index, age) in [801.0, 799.0].enumerated() {
            let at = now - age * Self.day
            try await store.recordExposure(
                ExperimentExposure(experimentIdentifier: "purge-\(index)", customer: customer, variant: "a", exposedAt: at)
            )
            try await store.recordTransaction(
                SubscriptionTransaction(
                    environment: "Sandbox",
                    transactionId: "\(9_000 + index)",
                    originalTransactionId: "9000",
                    customer: customer,
                    productIdentifier: TestPayloads.productIdentifier,
                    subscriptionGroupIdentifier: "group",
                    price: 9_990,
                    currency: "USD",
                    purchaseDate: Self.milliseconds(at),
                    expiresDate: Self.milliseconds(at + 30 * Self.day),
                    revocationDate: nil
                )
            )
        }
        func revenue(_ index: Int) async throws -> [String: Int64]? {
            try await store.experimentOutcomes(
                ExperimentOutcomeQuery(
                    experimentIdentifier: "purge-\(index)",
                    bundleIdentifier: customer.bundleIdentifier,
                    productIdentifier: TestPayloads.productIdentifier,
                    offers: [:],
                    window: Int64(Self.day * 1_000),
                    matureAt: Self.milliseconds(now),
                    exposedBefore: nil
                )
            )["a"]?.revenue
        }
        #expect(try await revenue(0) == ["USD": 9_990])
        #expect(try await revenue(1) == ["USD": 9_990])
        await StorePurge(store: store, clockSkew: 300, logger: Logger(label: "test")).purgeOnce()
        #expect(try await revenue(0) == [:])
        #expect(try await revenue(1) == ["USD": 9_990])
        try await store.close()
    }
}
