import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// An experiment from exposure to result, through the service's own endpoints on both stores: customers exposed
/// weeks ago (their exposures written with that date) and days ago, their purchases, renewals and refunds delivered
/// as Apple-shaped notifications signed by the test chain, twice and shuffled; `GET /admin/experiments/{id}` counts
/// every metric exactly over the mature customers and ignores what falls outside each window or after the end.
@Suite struct ExperimentEndToEndTests {
    static let adminToken = "carol-token-0123456789abcdef"
    static let day: TimeInterval = 86_400

    /// A service for a policy, with the notification ingestor trusting the test chain.
    struct Fixture {
        let store: any OfferStore
        let service: OfferService
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
            service = OfferService(
                apps: [], keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
                policy: policy, store: store, notifications: ingestor)
            self.bundle = bundle
        }

        /// A purchase (`offer`: a promotional offer) or a renewal of subscription `index` of `customer`, paid `price`.
        mutating func transaction(_ customer: String, _ index: Int, renewal: Int = 0, at: Date, days: Double, price: Int64 = 9_990,
                                  currency: String = "USD", offer: String? = nil, refundedAt: Date? = nil) async throws {
            let original = "\(base + index)"
            var transaction = TestPayloads.transaction(
                originalTransactionId: original, transactionId: renewal == 0 ? original : "\(original)\(renewal)", appAccountToken: customer,
                purchaseDate: at, expiresDate: at + days * ExperimentEndToEndTests.day, bundleIdentifier: bundle)
            (transaction.price, transaction.currency) = (price, currency)
            if let offer { (transaction.offerType, transaction.offerIdentifier) = (.promotionalOffer, offer) }
            if renewal > 0 { transaction.transactionReason = .renewal }
            let info = TestPayloads.renewalInfo(for: transaction)
            let type: NotificationType = renewal > 0 ? .didRenew : .subscribed
            deliveries.append(try await signer.signNotification(
                type, subtype: renewal > 0 ? nil : .resubscribe, transaction: transaction, renewalInfo: info, bundleIdentifier: bundle))
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
            try await store.recordExposure(ExperimentExposure(
                experimentIdentifier: experiment.identifier, customer: key, variant: experiment.variant(for: key).name, exposedAt: at))
        }

        func router() throws -> Router<OfferSignerRequestContext> {
            buildRouter(service: service, adminTokens: try BearerTokens(parsing: "carol:\(ExperimentEndToEndTests.adminToken)"))
        }
    }

    static func policy(bundle: String, id: String, settings: String) throws -> OfferPolicy {
        try OfferPolicy(text: """
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
            """)
    }

    @Test("converted, retained, realized revenue, redeemed and renewed are exact over the mature customers; the maturing are counted apart",
          arguments: StoreBackend.available)
    func matureMetrics(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)")
        let now = Date()
        let policy = try Self.policy(bundle: bundle, id: id, settings: """
                metric: converted
                windowDays: 30
                end: \(ISO8601DateFormatter().string(from: now + 10 * Self.day))
            """)
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
            try await fixture.transaction(customer, index, at: exposedAt + Self.day, days: 7, price: 4_990, offer: "half_off",
                                          refundedAt: index == 2 ? exposedAt + 3 * Self.day : nil)
            if index < 2 { try await fixture.transaction(customer, index, renewal: 1, at: exposedAt + 8 * Self.day, days: 30) }
        }
        // Four of the holdout subscribe at full price on day 2 (one in euros); one only on day 35, after its window.
        for (index, customer) in matureHeld.prefix(5).enumerated() {
            try await fixture.transaction(customer, 10 + index, at: exposedAt + (index == 4 ? 35 : 2) * Self.day, days: 30,
                                          price: index == 3 ? 8_990 : 9_990, currency: index == 3 ? "EUR" : "USD")
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
            let unknown = try await client.execute(uri: "/admin/experiments/nope", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(unknown.status == .notFound)
            let list = try await client.execute(uri: "/admin/experiments", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(list.text.contains("\"exposed\":\(customers.count)"))
        }
        try await fixture.store.close()
    }

    @Test("after the end: redemptions past each window and the end plus the window are ignored, exposures after the end are not counted",
          arguments: StoreBackend.available)
    func afterTheEnd(_ backend: StoreBackend) async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)")
        let now = Date()
        let (start, end) = (now - 100 * Self.day, now - 40 * Self.day)
        let formatter = ISO8601DateFormatter()
        let policy = try Self.policy(bundle: bundle, id: id, settings: """
                windowDays: 20
                start: \(formatter.string(from: start))
                end: \(formatter.string(from: end))
            """)
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
}
