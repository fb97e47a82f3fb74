import Foundation
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

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
            try await store.record(
                IssuedSignature(
                    nonce: UUID().uuidString.lowercased(),
                    keyIdentifier: "KEY1",
                    bundleIdentifier: app,
                    productIdentifier: "com.example.monthly",
                    offerIdentifier: "winback_50",
                    applicationUsername: "user-\(index)",
                    timestamp: timestamp,
                    format: "legacy"
                )
            )
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
            store.logDecision(
                PolicyDecisionRecord(
                    decidedAt: start + Int64(index) * 1_000,
                    channel: "legacy",
                    bundleIdentifier: app,
                    productIdentifier: "com.example.monthly",
                    offerIdentifier: "winback_50",
                    customerHash: "0123456789ab",
                    policyVersion: String(repeating: "0", count: 64),
                    granted: granted,
                    reasons: granted ? "" : "lapsed:not_lapsed",
                    lookbackSeconds: 0,
                    factsHash: "facts-\(app)",
                    factsSnapshot: #"{"f":{},"i":[]}"#
                )
            )
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

/// The daily counts behind the refusal rate (``DecisionRollup``): whatever the range — whole days, days cut by it at
/// either end, one part of a day — the counts are the log's own, and a batch written twice counts once.
@Suite struct DecisionRollupTests {
    /// A day of its own, far ahead of every other test's decisions (and of any purge), so a shared PostgreSQL
    /// database's other decisions never fall in it.
    let firstDay = 47_482 + Int64.random(in: 0..<100_000)
    let day: Int64 = 86_400_000

    @Test("a range's counts equal the log's, for whole days, cut days and a part of one day", arguments: Backend.available)
    func countsMatchTheLog(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let reporting = try #require(store as? any StoreActivityReporting)
        let start = firstDay * day
        // Three days: decisions every 3 hours, every third refused.
        var decisions: [(at: Int64, granted: Bool)] = []
        for index in 0..<24 { decisions.append((start + Int64(index) * 3 * 3_600_000 + 1_000, index % 3 != 0)) }
        for (at, granted) in decisions {
            store.logDecision(Self.decision(at: at, granted: granted, identifier: at))
        }
        // The same decisions again (a batch written twice after an unknown outcome is the same rows): counted once.
        await store.flushDecisionLog()
        for (at, granted) in decisions.prefix(5) {
            store.logDecision(Self.decision(at: at, granted: granted, identifier: at))
        }
        await store.flushDecisionLog()
        func expected(_ range: Range<Int64>) -> (granted: Int, refused: Int) {
            let inside = decisions.filter { range.contains($0.at) }
            return (inside.filter(\.granted).count, inside.filter { !$0.granted }.count)
        }
        let hour: Int64 = 3_600_000
        let ranges: [Range<Int64>] = [
            start..<(start + 3 * day),  // three whole days: the daily counts alone
            (start + 5 * hour)..<(start + 2 * day + 7 * hour),  // cut at both ends: the log for the two part days
            (start + day + 1)..<(start + 3 * day),  // cut at the start only
            start..<(start + day + 13 * hour),  // cut at the end only
            (start + 4 * hour)..<(start + 20 * hour),  // a part of one day
            (start + 3 * day)..<(start + 4 * day),  // after them: nothing
            (start - day)..<(start + 4 * day),  // around them, with empty days at both ends
        ]
        for range in ranges {
            let counts = try await reporting.decisionCounts(since: range.lowerBound, until: range.upperBound)
            let wanted = expected(range)
            #expect(counts.granted == wanted.granted && counts.refused == wanted.refused, "\(range.lowerBound - start)..<\(range.upperBound - start)")
        }
        try await store.close()
    }

    @Test("a batch's decisions read back as written, their snapshots and optional columns included", arguments: Backend.available)
    func batchReadsBackAsWritten(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let app = "com.example.batch-\(UUID().uuidString.prefix(8).lowercased())"
        let start = firstDay * day
        // Thirty decisions over three snapshots: a retention entry and an experiment on some, none on the others.
        var written: [PolicyDecisionRecord] = []
        for index in 0..<30 {
            var record = Self.decision(at: start + Int64(index), granted: index % 4 != 0, identifier: Int64(index + 1))
            record.bundleIdentifier = app
            record.factsHash = "\(app)-facts-\(index % 3)"
            record.factsSnapshot = #"{"f":{"n":\#(index % 3)},"i":[]}"#
            if index % 2 == 0 { record.retentionEntry = "entry-\(index)" }
            if index % 5 == 0 { (record.experimentIdentifier, record.experimentVariant) = ("exp-\(index)", "treatment") }
            written.append(record)
            store.logDecision(record)
        }
        await store.flushDecisionLog()
        let read = try await store.policyDecisions(bundleIdentifiers: [app], since: start, until: start + day, after: nil, limit: 100)
        #expect(read == written)
        // Kept in the decisions' rows, not in `decision_facts`.
        #expect(try await store.decisionSnapshots(hashes: (0..<3).map { "\(app)-facts-\($0)" }).isEmpty)
        try await store.close()
    }

    @Test(
        "a decision written before schema version 24 reads back without its snapshot, which is read by its hash",
        arguments: Backend.available
    )
    func decisionsWrittenBefore(_ backend: Backend) async throws {
        let (store, _) = try await backend.open()
        let sql = try #require(store as? SQLOfferStore)
        let app = "com.example.before-\(UUID().uuidString.prefix(8).lowercased())"
        let start = firstDay * day
        var decision = Self.decision(at: start + 5, granted: true, identifier: 77)
        decision.bundleIdentifier = app
        decision.factsHash = "\(app)-facts"
        let record = decision
        // As a batch wrote it before: the snapshot in `decision_facts`, none in the decision's row.
        try await sql.backend.transaction { database in
            try await database.raw(
                """
                INSERT INTO decision_facts (hash, facts, last_used_at) \
                VALUES (\(bind: record.factsHash), '{"f":{"n":1},"i":[]}', \(bind: record.decidedAt))
                """
            ).run()
            try await database.raw(
                """
                INSERT INTO policy_decisions (decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, customer_hash, \
                policy_version, granted, reasons, lookback_seconds, facts_hash) VALUES (\(bind: record.decidedAt), \(bind: record.identifier), \
                \(bind: record.channel), \(bind: app), \(bind: record.productIdentifier), \(bind: record.offerIdentifier), \
                \(bind: record.customerHash), \
                \(bind: record.policyVersion), 1, \(bind: record.reasons), \(bind: record.lookbackSeconds), \(bind: record.factsHash))
                """
            ).run()
        }
        let read = try await store.policyDecisions(bundleIdentifiers: [app], since: start, until: start + day, after: nil, limit: 10)
        #expect(read.map(\.identifier) == [77] && read.first?.factsSnapshot == "")
        #expect(try await store.decisionSnapshots(hashes: [record.factsHash]) == [record.factsHash: #"{"f":{"n":1},"i":[]}"#])
        // Its rows go, by key: the daily counts never had it, and a shared database's later runs count every app's decisions.
        try await sql.backend.transaction { database in
            try await database.raw("DELETE FROM policy_decisions WHERE bundle_identifier = \(bind: app)").run()
            try await database.raw("DELETE FROM decision_facts WHERE hash = \(bind: record.factsHash)").run()
        }
        try await store.close()
    }

    private static func decision(at: Int64, granted: Bool, identifier: Int64) -> PolicyDecisionRecord {
        var record = PolicyDecisionRecord(
            decidedAt: at,
            channel: "legacy",
            bundleIdentifier: "com.example.rollup",
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            customerHash: "0123456789ab",
            policyVersion: String(repeating: "0", count: 64),
            granted: granted,
            reasons: granted ? "" : "lapsed:not_lapsed",
            lookbackSeconds: 0,
            factsHash: "facts-rollup",
            factsSnapshot: #"{"f":{},"i":[]}"#
        )
        record.identifier = identifier
        return record
    }
}
