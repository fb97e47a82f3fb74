import Foundation
import OfferApplication
import OfferModel
import Synchronization
import Testing

/// ``StoreHealth`` over a fake store lifecycle: `/readyz`'s bound on the ping, the overview's reachability and
/// activity, the decision counts' range.
@Suite struct StoreHealthTests {
    let store = StoreLifecycleFake(
        activity: StoreActivity(lastSignature: Date(timeIntervalSince1970: 1_800_000_000), lastNotification: nil),
        counts: (granted: 7, refused: 3)
    )

    var health: StoreHealth { StoreHealth(store: store, activity: store) }

    @Test func withoutAStoreItIsReadyAndNeverReachable() async throws {
        let health = StoreHealth(store: nil, activity: nil)
        try await health.checkReady(within: .milliseconds(100))
        #expect(!health.hasStore)
        #expect(await health.isReachable() == false)
        #expect(await health.latestActivity() == nil)
        #expect(try await health.decisionCounts(from: Date(), to: Date()) == nil)
    }

    @Test func aStoreThatAnswersIsReady() async throws {
        try await health.checkReady(within: .seconds(5))
        #expect(health.hasStore)
        #expect(await health.isReachable())
        #expect(store.pings == 2)
    }

    @Test func aStoreThatFailsIsNotReady() async throws {
        store.failing(true)
        let error = await #expect(throws: OfferServiceError.self) { try await health.checkReady(within: .seconds(5)) }
        #expect(error?.code == .storeUnavailable)
        #expect(await health.isReachable() == false)
        #expect(await health.latestActivity() == nil)
    }

    @Test func aPingPastTheBoundIsNotReadyWithoutWaitingForIt() async throws {
        store.pingTakes(.seconds(30))
        let started = ContinuousClock.now
        let error = await #expect(throws: OfferServiceError.self) { try await health.checkReady(within: .milliseconds(200)) }
        #expect(error?.code == .storeUnavailable)
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    @Test func activityAndDecisionCountsAreTheStores() async throws {
        #expect(await health.latestActivity() == store.activity)
        let from = Date(timeIntervalSince1970: 1_800_000_000)
        let counts = try #require(try await health.decisionCounts(from: from, to: from.addingTimeInterval(86_400)))
        #expect(counts.granted == 7 && counts.refused == 3)
        let ranges = store.countedRanges.withLock { $0 }
        #expect(ranges.count == 1)
        #expect(ranges.first?.since == 1_800_000_000_000 && ranges.first?.until == 1_800_086_400_000)
    }

    @Test func decisionCountsThatCannotBeReadAreStoreUnavailable() async throws {
        store.failing(true)
        let error = await #expect(throws: OfferServiceError.self) { _ = try await health.decisionCounts(from: Date(), to: Date()) }
        #expect(error?.code == .storeUnavailable)
    }
}
