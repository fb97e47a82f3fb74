import Foundation
import OfferModel
import OfferStore
import Synchronization

/// Experiment exposures in memory: a fake of the ``ExperimentLog`` capability that counts the exposures recorded (the
/// first per experiment and customer wins) and keeps the outcome queries it was asked.
final class ExperimentMemoryLog: ExperimentLog {
    private let exposures = Mutex<[String: ExperimentExposure]>([:])
    private let asked = Mutex<[ExperimentOutcomeQuery]>([])

    /// The outcome queries asked, oldest first.
    var outcomeQueries: [ExperimentOutcomeQuery] { asked.withLock { $0 } }

    @discardableResult
    func recordExposure(_ exposure: ExperimentExposure) async throws -> Bool {
        exposures.withLock { exposures in
            let key = "\(exposure.experimentIdentifier) \(exposure.customer)"
            guard exposures[key] == nil else { return false }
            exposures[key] = exposure
            return true
        }
    }

    func exposureCounts(experimentIdentifier: String) async throws -> [String: Int] {
        exposures.withLock { exposures in
            exposures.values.filter { $0.experimentIdentifier == experimentIdentifier }.reduce(into: [:]) { $0[$1.variant, default: 0] += 1 }
        }
    }

    func experimentOutcomes(_ query: ExperimentOutcomeQuery) async throws -> [String: ExperimentVariantOutcome] {
        asked.withLock { $0.append(query) }
        return [:]
    }

    func recordTransaction(_ transaction: SubscriptionTransaction) async throws {}

    func purgeSubscriptionTransactions(purchasedBefore: Date) async throws -> Int { 0 }
}
