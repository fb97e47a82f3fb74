import Foundation
import Logging
import OfferModel
import OfferStore
import Prometheus
import Testing

/// `offer_signer_decision_log_dropped_total{reason}` (docs/observability.md): every decision the decision log could
/// not write is counted. The retries that come before are tested in `DecisionLogRetryTests` (OfferStoreTests).
@Suite struct DecisionLogMetricTests {
    /// The series' values in the process's registry, by `reason`.
    private func dropped() -> [String: Double] {
        var buffer: [UInt8] = []
        RedemptionMetricTests.registry.emit(into: &buffer)
        var values: [String: Double] = [:]
        for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("offer_signer_decision_log_dropped_total{") {
            guard let reason = line.firstMatch(of: /reason="([^"]*)"/)?.1, let value = line.split(separator: " ").last.flatMap({ Double($0) }) else {
                continue
            }
            values[String(reason)] = value
        }
        return values
    }

    @Test("a decision logged after the store closed is counted as not written")
    func droppedDecisionsAreCounted() async throws {
        _ = RedemptionMetricTests.registry  // the process's metrics go to it from now on
        let store = try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
        try await store.close()
        let before = dropped()["not_written"] ?? 0
        store.logDecision(
            PolicyDecisionRecord(
                decidedAt: Int64(Date().timeIntervalSince1970 * 1000),
                channel: "offer",
                bundleIdentifier: "com.example.closed",
                productIdentifier: "com.example.monthly",
                offerIdentifier: "winback_50",
                retentionEntry: nil,
                customerHash: "0123456789ab",
                policyVersion: String(repeating: "0", count: 64),
                granted: true,
                reasons: "",
                lookbackSeconds: 0,
                factsHash: "facts",
                factsSnapshot: "{}"
            )
        )
        // A closed queue refuses at once, on the caller's thread. Other tests of the process may drop decisions too.
        #expect((dropped()["not_written"] ?? 0) - before >= 1)
    }
}
