import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Metrics
import OfferApplication
import OfferModel
import OfferSignerServer
import OfferStore
import Prometheus
import Testing

/// `offer_signer_redemptions_total{offerType,attributed}` in `GET /metrics` (docs/outcomes.md): a redemption of an
/// offer this service signed counts as attributed, an offer code as not.
@Suite struct RedemptionMetricTests {
    /// The process's metrics go to this registry from the first use on, as `serve` bootstraps them (once a process).
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory.offerSigner(registry: registry))
        return registry
    }()

    /// The series' values in a `/metrics` answer, by `offerType` and `attributed`.
    private func redemptions(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("offer_signer_redemptions_total{") {
            guard let type = line.firstMatch(of: /offerType="([^"]*)"/)?.1, let attributed = line.firstMatch(of: /attributed="([^"]*)"/)?.1,
                let value = line.split(separator: " ").last.flatMap({ Double($0) })
            else { continue }
            values["\(type) \(attributed)"] = value
        }
        return values
    }

    @Test("redemptions are counted by offer type and attribution")
    func countedOnce() async throws {
        let registry = Self.registry
        let fixture = try await StoreFixture(.sqlite)
        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: fixture.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "carol:\(StoreFixture.adminToken)"),
            metricsRegistry: registry
        )
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            func metrics() async throws -> [String: Double] {
                redemptions(
                    try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(StoreFixture.adminToken)"]).text
                )
            }
            #expect(try await fixture.sign(client, "everyone", "metric-a").status == .ok)
            var signed = TestPayloads.transaction(
                originalTransactionId: OutcomeTests.otid(),
                appAccountToken: "metric-a",
                purchaseDate: Date() + 1,
                bundleIdentifier: fixture.bundle
            )
            signed.offerType = .promotionalOffer
            signed.offerIdentifier = "everyone"
            var code = TestPayloads.transaction(
                originalTransactionId: OutcomeTests.otid(),
                appAccountToken: "metric-b",
                purchaseDate: Date(),
                bundleIdentifier: fixture.bundle
            )
            code.offerType = .offerCode
            code.offerIdentifier = "SPRING"
            let before = try await metrics()
            for transaction in [signed, code, signed] {
                let payload = try await fixture.signer.signNotification(
                    .subscribed,
                    subtype: .resubscribe,
                    transaction: transaction,
                    renewalInfo: TestPayloads.renewalInfo(for: transaction),
                    bundleIdentifier: fixture.bundle
                )
                #expect(try await client.post("/v1/notifications/appstore", json: "{\"signedPayload\":\"\(payload)\"}").status == .ok)
            }
            let after = try await metrics()
            // Other tests of the process record redemptions too: at least these, and the series present.
            #expect((after["2 true"] ?? 0) - (before["2 true"] ?? 0) >= 1, "\(after)")
            #expect((after["3 false"] ?? 0) - (before["3 false"] ?? 0) >= 1, "\(after)")
        }
        try await fixture.store.close()
    }

    @Test("a HEAD request is counted and timed like a GET, though no body is written")
    func headRequestsAreCounted() async throws {
        let registry = Self.registry
        let test = try TestService()
        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "carol:\(StoreFixture.adminToken)"),
            metricsRegistry: registry
        )
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            func headCount() async throws -> Double {
                let text = try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(StoreFixture.adminToken)"])
                    .text
                return text.split(separator: "\n")
                    .filter { $0.hasPrefix("hb_requests{") && $0.contains(#"http_request_method="HEAD""#) && $0.contains(#"http_route="/v1/keys""#) }
                    .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
            }
            let before = try await headCount()
            for _ in 0..<2 {
                let response = try await client.execute(uri: "/v1/keys", method: .head)
                #expect(response.status == .ok && response.body.readableBytes == 0)
            }
            #expect(try await headCount() == before + 2)
        }
    }
}
