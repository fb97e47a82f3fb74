import Foundation
import OfferModel
import OfferStore
import Synchronization

/// A customer's history in memory: a fake of the ``IssuedSignatureLog``, ``PolicyDecisionLog`` and ``OutcomeLog``
/// capabilities as the console's customer page reads them. Decisions logged stay queued until
/// ``flushDecisionLog()``, as the store's batched writer keeps them; `failing` makes every read throw.
final class CustomerHistoryMemoryLog: IssuedSignatureLog, PolicyDecisionLog, OutcomeLog {
    struct Unreachable: Error {}

    private struct State {
        var signatures: [IssuedSignature] = []
        var queued: [PolicyDecisionRecord] = []
        var decisions: [PolicyDecisionRecord] = []
        var outcomeQueries: [(key: CustomerKey, originalTransactionIds: [String], limit: Int)] = []
        var outcomes = CustomerOutcomes()
    }

    private let state = Mutex(State())
    private let failure = Mutex(false)

    /// Makes every later read throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    /// What ``customerOutcomes(_:originalTransactionIds:limit:)`` answers.
    func seed(_ outcomes: CustomerOutcomes) { state.withLock { $0.outcomes = outcomes } }

    /// Every outcome read, with its arguments.
    var outcomeQueries: [(key: CustomerKey, originalTransactionIds: [String], limit: Int)] { state.withLock { $0.outcomeQueries } }

    private func check() throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
    }

    func record(_ signature: IssuedSignature, startWhenReady: StartWhenReady?, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        state.withLock { $0.signatures.append(signature) }
        completion(.success(()))
    }

    func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature] {
        try check()
        return state.withLock { state in
            Array(
                state.signatures
                    .filter { signature in
                        (query.bundleIdentifier.map { $0 == signature.bundleIdentifier } ?? true)
                            && (query.applicationUsername.map { $0 == signature.applicationUsername } ?? true)
                    }
                    .sorted { $0.timestamp > $1.timestamp }
                    .prefix(query.limit)
            )
        }
    }

    func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int {
        try await issuedSignatures(matching: query).count
    }

    func logDecision(_ decision: PolicyDecisionRecord) {
        state.withLock { $0.queued.append(decision) }
    }

    func flushDecisionLog() async {
        state.withLock { state in
            state.decisions += state.queued
            state.queued = []
        }
    }

    func customerDecisions(bundleIdentifier: String, customerHash: String, since: Int64, limit: Int) async throws -> [PolicyDecisionRecord] {
        try check()
        return state.withLock { state in
            Array(
                state.decisions
                    .filter { $0.bundleIdentifier == bundleIdentifier && $0.customerHash == customerHash && $0.decidedAt >= since }
                    .sorted { $0.decidedAt > $1.decidedAt }
                    .prefix(limit)
            )
        }
    }

    func recordRedemption(_ redemption: Redemption) async throws -> RedemptionRecording {
        throw Unreachable()  // not what the customer page reads
    }

    func recordSubscriptionEvent(_ event: SubscriptionEvent) async throws -> Int {
        throw Unreachable()
    }

    func recordRetentionAnswer(_ answer: RetentionAnswerRecord) async throws {
        throw Unreachable()
    }

    func purgeSubscriptionEvents(recordedBefore: Date) async throws -> Int { 0 }

    func customerOutcomes(_ key: CustomerKey, originalTransactionIds: [String], limit: Int) async throws -> CustomerOutcomes {
        try check()
        return state.withLock { state in
            state.outcomeQueries.append((key, originalTransactionIds, limit))
            return state.outcomes
        }
    }
}
