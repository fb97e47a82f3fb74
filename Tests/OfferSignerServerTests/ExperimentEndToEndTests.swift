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

/// An experiment from exposure to result, through the service's own endpoints on both stores: customers ask for
/// their offers (exposed), the half variant signs and some of its customers redeem and renew through Apple-shaped
/// notifications signed by the test chain; `GET /admin/experiments/{id}` counts them exactly.
@Suite struct ExperimentEndToEndTests {
    static let adminToken = "carol-token-0123456789abcdef"

    @Test("exposed, redeemed, renewed and revenue per variant are exact", arguments: StoreBackend.available)
    func endToEnd(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (bundle, id, product) = ("com.example.e2e-\(suffix)", "e2e-\(suffix)", TestPayloads.productIdentifier)
        var options = TestCertificateChain.Options()
        options.leafValidity = Date().addingTimeInterval(-30 * 86_400)...Date().addingTimeInterval(30 * 86_400)
        let signer = TestJWSSigner(chain: try TestCertificateChain(options))
        let policy = try OfferPolicy(text: """
            apps:
              - bundleIdentifier: \(bundle)
                products:
                  - productIdentifier: \(product)
                    offers:
                      - offerIdentifier: half_off
            experiments:
              - id: \(id)
                productIdentifier: \(product)
                variants:
                  - { name: half, offerIdentifier: half_off, weight: 1 }
                  - { name: none, holdout: true, weight: 1 }
            """)
        let experiment = try #require(policy.experiment(id))
        let verifier = try SignedDataVerifier(bundleIdentifier: bundle, environments: [.sandbox], trustedRoots: [signer.chain.root])
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: Logger(label: "test"), readableTokens: true)
        let service = OfferService(
            apps: [], keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
            policy: policy, store: store, notifications: ingestor)
        let customers = (0..<40).map { "e2e-\($0)" }
        let half = customers.filter { !experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: $0)).isHoldout }
        let held = customers.filter { !half.contains($0) }
        try #require(half.count >= 5 && !held.isEmpty)
        let router = buildRouter(service: service, adminTokens: try BearerTokens(parsing: "carol:\(Self.adminToken)"))
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            for customer in customers {
                #expect(try await client.post("/v1/offers/eligibility", json: #"{"applicationUsername":"\#(customer)"}"#).status == .ok)
            }
            for customer in half {
                let signed = try await client.post("/v1/offers/sign", json: #"{"productIdentifier":"\#(product)","offerIdentifier":"half_off","applicationUsername":"\#(customer)"}"#)
                #expect(signed.status == .ok)
            }
            // Five of the half variant redeem (4.99 USD), two of them renew at full price; delivered twice, shuffled.
            var deliveries: [String] = []
            let purchase = Date() + 1
            let base = Int.random(in: 5_000_000_000_000...5_999_999_999_999) * 10  // transactions are unique per store, whichever test ran before
            for (index, customer) in half.prefix(5).enumerated() {
                let original = "\(base + index)"
                var redeemed = TestPayloads.transaction(originalTransactionId: original, appAccountToken: customer, purchaseDate: purchase, bundleIdentifier: bundle)
                (redeemed.offerType, redeemed.offerIdentifier, redeemed.price, redeemed.currency) = (.promotionalOffer, "half_off", 4_990, "USD")
                deliveries.append(try await signer.signNotification(
                    .subscribed, subtype: .resubscribe, transaction: redeemed, renewalInfo: TestPayloads.renewalInfo(for: redeemed), bundleIdentifier: bundle))
                if index < 2 {
                    var renewal = TestPayloads.transaction(
                        originalTransactionId: original, transactionId: "\(original)1", appAccountToken: customer, purchaseDate: purchase + 3_600, bundleIdentifier: bundle)
                    renewal.transactionReason = .renewal
                    deliveries.append(try await signer.signNotification(
                        .didRenew, transaction: renewal, renewalInfo: TestPayloads.renewalInfo(for: renewal), bundleIdentifier: bundle))
                }
            }
            for payload in deliveries.shuffled() + deliveries.shuffled() {
                #expect(try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}").status == .ok)
            }
            let answer = try await client.execute(uri: "/admin/experiments/\(id)", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(answer.status == .ok, "\(answer.text)")
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            let report = try decoder.decode(ExperimentReport.self, from: Data(answer.body.readableBytesView))
            let byName = Dictionary(uniqueKeysWithValues: report.variants.map { ($0.name, $0) })
            #expect(byName["half"]?.exposed == half.count && byName["none"]?.exposed == held.count)
            #expect(byName["half"]?.redeemed == 5 && byName["half"]?.renewedAfterOffer == 2)
            #expect(byName["half"]?.revenue.map(\.milliunits) == [5 * 4_990])
            #expect(byName["none"]?.redeemed == 0)
            #expect(byName["half"]?.rate?.estimate == 5.0 / Double(half.count))
            #expect(report.reference == "none" && report.readable)
            let unknown = try await client.execute(uri: "/admin/experiments/nope", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(unknown.status == .notFound)
            let list = try await client.execute(uri: "/admin/experiments", method: .get, headers: [.authorization: "Bearer \(Self.adminToken)"])
            #expect(list.text.contains("\"exposed\":\(customers.count)"))
        }
        try await store.close()
    }
}
