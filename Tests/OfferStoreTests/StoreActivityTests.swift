import Foundation
import OfferModel
import OfferStore
import Testing

/// What the console's overview reads of the store (``StoreActivityReporting``): the newest signature and notification,
/// and the decisions of a range counted by their answer, on SQLite and PostgreSQL.
@Suite struct StoreActivityTests {
    /// A bundle identifier no other test uses, so tests sharing a PostgreSQL database do not meet.
    let app = "com.example.activity-\(UUID().uuidString.prefix(8).lowercased())"

    private func reporting(_ store: any OfferStore) throws -> any StoreActivityReporting {
        try #require(store as? any StoreActivityReporting)
    }

    @Test("the latest signature and notification are the newest written (none on an empty SQLite store)", arguments: Backend.available)
    func latestActivity(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let reporting = try reporting(store)
        if backend == .sqlite {
            #expect(try await reporting.latestActivity() == StoreActivity(lastSignature: nil, lastNotification: nil))
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for (index, timestamp) in [now - 90_000, now - 1_000, now - 30_000].enumerated() {
            try await store.record(IssuedSignature(
                nonce: UUID().uuidString.lowercased(), keyIdentifier: "KEY1", bundleIdentifier: app, productIdentifier: "com.example.monthly",
                offerIdentifier: "winback_50", applicationUsername: "user-\(index)", timestamp: timestamp, format: "legacy"))
        }
        let before = Date().addingTimeInterval(-1)
        #expect(try await store.markNotificationProcessed(notificationUUID: UUID().uuidString.lowercased()))
        let after = Date().addingTimeInterval(1)
        let activity = try await reporting.latestActivity()
        let lastSignature = try #require(activity.lastSignature)
        let lastNotification = try #require(activity.lastNotification)
        if backend == .sqlite {
            #expect(Int64((lastSignature.timeIntervalSince1970 * 1000).rounded()) == now - 1_000)
            #expect(lastNotification > before && lastNotification < after)
        } else {
            // Other tests write to the same database meanwhile: the newest is at least ours.
            #expect(lastSignature.timeIntervalSince1970 * 1000 >= Double(now - 1_000) - 1)
            #expect(lastNotification > before)
        }
        try await store.close()
    }

    @Test("decisions are counted granted and refused within the range, its end excluded", arguments: Backend.available)
    func decisionCounts(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let reporting = try reporting(store)
        // A range of its own, far ahead of every other test's decisions (and of any purge, which removes old ones).
        let start = 4_102_444_800_000 + Int64.random(in: 0..<1_000_000) * 10_000
        let answers = [true, false, false, true, false]
        for (index, granted) in answers.enumerated() {
            store.logDecision(PolicyDecisionRecord(
                decidedAt: start + Int64(index) * 1_000, channel: "legacy", bundleIdentifier: app, productIdentifier: "com.example.monthly",
                offerIdentifier: "winback_50", customerHash: "0123456789ab", policyVersion: String(repeating: "0", count: 64), granted: granted,
                reasons: granted ? "" : "lapsed:not_lapsed", lookbackSeconds: 0, factsHash: "facts-\(app)", factsSnapshot: #"{"f":{},"i":[]}"#))
        }
        // The counts read what is written; the decision log writes in batches (the console does not wait for one).
        await store.flushDecisionLog()
        let all = try await reporting.decisionCounts(since: start, until: start + 5_000)
        #expect(all.granted == 2 && all.refused == 3)
        // The last decision (refused) sits at start + 4 s: an end there leaves it out.
        let firstFour = try await reporting.decisionCounts(since: start, until: start + 4_000)
        #expect(firstFour.granted == 2 && firstFour.refused == 2)
        let none = try await reporting.decisionCounts(since: start - 10_000, until: start)
        #expect(none.granted == 0 && none.refused == 0)
        try await store.close()
    }
}
