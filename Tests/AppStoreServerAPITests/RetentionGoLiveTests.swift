import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import Testing

/// `retention go-live`'s steps against the stand-in of Apple's API: Sandbox URL, performance test, Production URL on
/// PASS only.
@Suite struct RetentionGoLiveTests {
    let appKey = P256.Signing.PrivateKey()
    let url = "https://offers.example.com/v1/retention/appstore"
    let sandboxURL = "https://sandbox.offers.example.com/v1/retention/appstore"

    @Test func aFailedTestLeavesProductionAloneAndSaysWhatToDoThenAPassGoesLive() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            await fake.state.scriptPerformanceTests([.fail, .pass])
            let goLive = try self.goLive(port: port)
            let lines = Lines()

            let first = try await goLive.run(
                productionURL: self.url,
                sandboxURL: self.sandboxURL,
                originalTransactionId: "2000000123456789",
                pollInterval: .milliseconds(10),
                report: { line in Task { await lines.add(line) } }
            )
            guard case .failed(let failed) = first else {
                Issue.record("expected a failed test, got \(first)")
                return
            }
            #expect(failed.responseTimes?.p95 == 1200)
            #expect(await fake.state.realtimeURL(in: "sandbox") == self.sandboxURL)
            #expect(await fake.state.realtimeURL(in: "production") == nil)
            #expect(await fake.state.count("PUT realtime/url", in: "production") == 0)
            let advice = RetentionGoLive.advice(failed).joined(separator: "\n")
            #expect(advice.contains("too slow"))
            #expect(
                RetentionGoLive.summary(failed).contains(
                    "Response times: p50 450 ms, p90 900 ms, p95 1200 ms, p99 2400 ms, average 520 ms (limit: 700 ms)"
                )
            )

            let second = try await goLive.run(
                productionURL: self.url,
                sandboxURL: self.sandboxURL,
                originalTransactionId: "2000000123456789",
                pollInterval: .milliseconds(10),
                report: { line in Task { await lines.add(line) } }
            )
            guard case .live(let passed) = second else {
                Issue.record("expected live, got \(second)")
                return
            }
            #expect(passed.result == .pass)
            #expect(await fake.state.realtimeURL(in: "production") == self.url)
            try await Task.sleep(for: .milliseconds(50))
            #expect(await lines.all.contains("Production real-time URL: \(self.url)"))
            #expect(await lines.all.contains { $0.hasPrefix("Result: FAIL, success rate 81 %") })
        }
    }

    @Test func aURLAppleWouldRefuseStopsBeforeAnythingIsSent() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let goLive = try self.goLive(port: port)
            await #expect(throws: RetentionMessagingError.self) {
                _ = try await goLive.run(productionURL: "http://offers.example.com", originalTransactionId: "1", report: { _ in })
            }
            #expect(await fake.state.count("PUT realtime/url", in: "sandbox") == 0)
        }
    }

    private func goLive(port: Int) throws -> RetentionGoLive {
        var configuration = AppStoreServerAPIConfiguration(
            keyIdentifier: FakeAppStore.keyIdentifier,
            privateKeyPEM: appKey.pemRepresentation,
            issuerId: FakeAppStore.issuerId,
            bundleIdentifier: TestPayloads.bundleIdentifier
        )
        configuration.baseURLs = .init(production: "http://localhost:\(port)/production", sandbox: "http://localhost:\(port)/sandbox")
        let options = RetentionMessagingClient.Options(timeout: .seconds(10), rateLimit: .off)
        return RetentionGoLive(
            sandbox: try RetentionMessagingClient(configuration: configuration, environment: .sandbox, options: options),
            production: try RetentionMessagingClient(configuration: configuration, environment: .production, options: options)
        )
    }
}

private actor Lines {
    var all: [String] = []
    func add(_ line: String) { all.append(line) }
}
