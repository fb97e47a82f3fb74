import Foundation
import OfferModel
import OfferStore
import Synchronization

/// A store's lifecycle and activity, as `/readyz` and the console's overview ask for them: a fake of the
/// ``StoreLifecycle`` and ``StoreActivityReporting`` capabilities whose ping answers, fails or takes `pingDelay`.
final class StoreLifecycleFake: StoreLifecycle, StoreActivityReporting {
    struct Unreachable: Error {}

    private let state = Mutex<(failing: Bool, pingDelay: Duration, pings: Int)>((false, .zero, 0))
    let activity: StoreActivity
    let counts: (granted: Int, refused: Int)
    /// The ranges ``decisionCounts(since:until:)`` was asked for, Unix ms.
    let countedRanges = Mutex<[(since: Int64, until: Int64)]>([])

    init(activity: StoreActivity = StoreActivity(lastSignature: nil, lastNotification: nil), counts: (granted: Int, refused: Int) = (0, 0)) {
        self.activity = activity
        self.counts = counts
    }

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { state.withLock { $0.failing = fails } }

    /// Makes every later ping take `delay` first.
    func pingTakes(_ delay: Duration) { state.withLock { $0.pingDelay = delay } }

    /// How many pings were sent.
    var pings: Int { state.withLock { $0.pings } }

    private func check() throws {
        if state.withLock({ $0.failing }) { throw Unreachable() }
    }

    func migrate() async throws {}

    func ping() async throws {
        let delay = state.withLock { state in
            state.pings += 1
            return state.pingDelay
        }
        if delay > .zero { try await Task.sleep(for: delay) }
        try check()
    }

    func close() async throws {}

    func latestActivity() async throws -> StoreActivity {
        try check()
        return activity
    }

    func decisionCounts(since: Int64, until: Int64) async throws -> (granted: Int, refused: Int) {
        try check()
        countedRanges.withLock { $0.append((since, until)) }
        return counts
    }
}
