import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferModel
import OfferStore

extension RetentionAnswering {
    /// Records a retention answer, to follow whether the customer stayed (a renewal or auto-renew turned back on
    /// after it), and waits for the record at most `wait` (`.zero` for a fallback answered because the store is
    /// slow): the record goes on without it. See ``startRecordingRetentionOutcome(_:bundleIdentifier:product:answer:now:)``.
    func recordRetentionOutcome(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        product: String,
        answer: RealtimeResponseBody,
        now: Date,
        wait: Duration = .milliseconds(500)
    ) async {
        let recording = startRecordingRetentionOutcome(request, bundleIdentifier: bundleIdentifier, product: product, answer: answer, now: now)
        await Self.waitForRecording(recording, upTo: wait)
    }

    /// Starts recording a retention answer in a task of its own, never cancelled (an answer that stops waiting does
    /// not abandon the record), and returns it. A request without a usable original transaction, request
    /// identifier or environment is not followed (`nil`); a store failure is logged, never failing the answer.
    func startRecordingRetentionOutcome(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        product: String,
        answer: RealtimeResponseBody,
        now: Date
    ) -> Task<Void, Never>? {
        guard let store = pipeline.store, let original = request.originalTransactionId, OutcomeFields.isTransactionIdentifier(original),
            let requestIdentifier = request.requestIdentifier?.lowercased(), OutcomeFields.isIdentifier(requestIdentifier),
            let environment = request.environment?.rawValue, OutcomeFields.isWord(environment, maximum: 32)
        else { return nil }
        let record = RetentionAnswerRecord(
            bundleIdentifier: bundleIdentifier,
            requestIdentifier: requestIdentifier,
            environment: environment,
            originalTransactionId: original,
            productIdentifier: product,
            offered: answer.promotionalOffer != nil,
            answeredAt: Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        )
        let logger = self.logger
        return Task {
            do {
                try await store.recordRetentionAnswer(record)
            } catch {
                logger.error("a retention answer was not recorded for the outcome report: the customer store failed")
            }
        }
    }

    /// Waits for a recording started by ``startRecordingRetentionOutcome(_:bundleIdentifier:product:answer:now:)``, at
    /// most `wait`.
    static func waitForRecording(_ recording: Task<Void, Never>?, upTo wait: Duration = .milliseconds(500)) async {
        guard let recording, wait > .zero else { return }
        _ = try? await withDeadline(wait) { await recording.value }
    }
}
