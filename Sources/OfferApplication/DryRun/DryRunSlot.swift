import Foundation
import OfferEligibility
import OfferErrors
import OfferModel
import OfferStore
import Synchronization

/// At most one policy dry-run at a time on a replica (``SigningPipeline/dryRun(_:days:)``): a second one asked while
/// one replays is refused at once with `dry_run_running` (HTTP 429 with `Retry-After`), never queued — replays of a
/// large log are long, and two at once only take twice the background lane's time.
///
/// Held without an actor or a lock across suspension: taking it is one atomic exchange.
final class DryRunSlot: Sendable {
    private let running = Atomic<Bool>(false)
    /// Awaited on the background lane after the slot is taken and before the replay starts: a test holds a dry-run
    /// there to ask for a second one (`nil`: nothing to wait for).
    let willReplay = Mutex<(@Sendable () async -> Void)?>(nil)

    /// Runs `body` holding the slot.
    /// - Throws: ``OfferServiceError`` `dry_run_running` when another dry-run holds it; what `body` throws.
    func holding<T>(_ body: () async throws -> T) async throws -> T {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw OfferServiceError(
                .dryRunRunning,
                """
                A policy dry-run is already running on this replica; only one runs at a time. Try again in \
                \(PolicyAdministration.dryRunRetryAfterSeconds) seconds, when it has finished.
                """
            )
        }
        defer { running.store(false, ordering: .releasing) }
        return try await body()
    }
}

extension PolicyAdministration {
    /// What a dry-run refused with `dry_run_running` is told to wait before asking again, in seconds (`Retry-After`).
    public static let dryRunRetryAfterSeconds = 30
}

extension SigningPipeline {
    /// Replays the decision log of the last `days` days under `candidate` (``PolicyDryRun``) on the
    /// ``BackgroundLane``, at most one at a time on this replica: the admin API's and the console's dry-run.
    /// - Throws: ``OfferServiceError`` `dry_run_running` (another dry-run is replaying), `store_unavailable` (no
    ///   store, or it failed), and what ``PolicyDryRun/run(days:now:)`` throws.
    public func dryRun(_ candidate: OfferPolicy, days: Int) async throws -> DryRunReport {
        guard let store else { throw OfferServiceError.storeUnavailable }
        return try await dryRunSlot.holding {
            try await BackgroundLane.shared.run {
                if let willReplay = dryRunSlot.willReplay.withLock({ $0 }) { await willReplay() }
                return try await PolicyDryRun(store: store, candidate: candidate, inForce: policy).run(days: days)
            }
        }
    }
}
