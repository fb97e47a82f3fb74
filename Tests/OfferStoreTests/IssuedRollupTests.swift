import Foundation
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// The outcome report's issued signatures and distinct customers, counted from the rollups (schema version 11),
/// against a direct count over the records written — random histories written out of order, windows whole-day
/// and not, on SQLite and PostgreSQL.
@Suite struct IssuedRollupTests {
    let app = "com.example.rollup-\(UUID().uuidString.prefix(8).lowercased())"
    let day: Int64 = 86_400_000

    /// What the report should say of `records` in `[from, to)`: (product, offer, channel) → (issued, customers), the
    /// customers of each channel as stored summed into the report's channel (`retention`, else `app`).
    private func expected(_ records: [IssuedSignature], from: Int64, to: Int64) -> [String: [Int]] {
        var issued: [String: Int] = [:]
        var customers: [String: Set<String>] = [:]
        for record in records where record.format != "introductory-eligibility" && record.timestamp >= from && record.timestamp < to {
            let row = "\(record.productIdentifier)|\(record.offerIdentifier)|\(record.channel == "retention" ? "retention" : "app")"
            issued[row, default: 0] += 1
            customers[row + "|" + record.channel, default: []].insert(record.applicationUsername)
        }
        var answer: [String: [Int]] = [:]
        for (row, count) in issued {
            let distinct = customers.filter { $0.key.hasPrefix(row + "|") }.map(\.value.count).reduce(0, +)
            answer[row] = [count, distinct]
        }
        return answer
    }

    private func reported(_ store: any OfferStore, from: Int64, to: Int64) async throws -> [String: [Int]] {
        let report = try await store.outcomeReport(OutcomeQuery(from: from, to: to, bundleIdentifier: app))
        var answer: [String: [Int]] = [:]
        for row in report.offers where row.issued > 0 || row.customers > 0 {
            answer["\(row.productIdentifier)|\(row.offerIdentifier)|\(row.channel)"] = [row.issued, row.customers]
        }
        return answer
    }

    private func randomHistory(count: Int, start: Int64, days: Int64, using generator: inout some RandomNumberGenerator) -> [IssuedSignature] {
        (0..<count).map { _ in
            IssuedSignature(
                nonce: UUID().uuidString.lowercased(),
                keyIdentifier: "KEY1",
                bundleIdentifier: app,
                productIdentifier: ["com.example.monthly", "com.example.yearly"].randomElement(using: &generator)!,
                offerIdentifier: ["winback", "save_50"].randomElement(using: &generator)!,
                applicationUsername: "user-\(Int.random(in: 0..<12, using: &generator))",
                timestamp: start + Int64.random(in: 0..<(days * day), using: &generator),
                format: ["legacy", "jws", "jws", "introductory-eligibility"].randomElement(using: &generator)!,
                channel: ["api", "app", "retention"].randomElement(using: &generator)!
            )
        }
    }

    /// Random windows over `[start, start + days)`: whole days, parts of days, one or two part days, the whole span.
    private func windows(start: Int64, days: Int64, using generator: inout some RandomNumberGenerator) -> [(Int64, Int64)] {
        var windows: [(Int64, Int64)] = [(start, start + days * day), (start - day, start + (days + 1) * day)]
        for _ in 0..<10 {
            let a = start - day + Int64.random(in: 0..<((days + 1) * day), using: &generator)
            let b = a + Int64.random(in: 1..<(days * day), using: &generator)
            let whole = Bool.random(using: &generator)
            windows.append(whole ? (a / day * day, (b / day + 1) * day) : (a, b))
        }
        windows.append((start + day / 2, start + day + day / 3))
        return windows
    }

    @Test("issued and customers from the rollups equal a direct count, for random histories written in any order", arguments: Backend.available)
    func rollupsEqualDirectCount(_ backend: Backend) async throws {
        var generator = SystemRandomNumberGenerator()
        let (store, _) = try await backend.open()
        let start = (1_800_000_000_000 + Int64.random(in: 0..<(400 * day), using: &generator)) / day * day
        let history = randomHistory(count: 240, start: start, days: 6, using: &generator).shuffled(using: &generator)
        var written: [IssuedSignature] = []
        // Written in three goes, reports in between: a day rolled is rolled again once written to.
        for part in stride(from: 0, to: history.count, by: 80).map({ history[$0..<min($0 + 80, history.count)] }) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for record in part { group.addTask { try await store.record(record) } }
                try await group.waitForAll()
            }
            written += part
            for (from, to) in windows(start: start, days: 6, using: &generator) {
                let wanted = expected(written, from: from, to: to)
                #expect(try await reported(store, from: from, to: to) == wanted, "window \(from)..<\(to), start \(start)")
                // The overview's totals: the same signatures, added up from the rollups and at most two part days.
                let totals = try await store.outcomeTotals(OutcomeQuery(from: from, to: to, bundleIdentifier: app))
                #expect(totals.issued == wanted.values.map { $0[0] }.reduce(0, +), "totals, window \(from)..<\(to), start \(start)")
            }
        }
        try await store.close()
    }

    @Test("a log written before the rollups is counted by the migration's back-fill")
    func migrationBackfills() async throws {
        var generator = SystemRandomNumberGenerator()
        let (store, path) = try await Backend.sqlite.open()
        let sql = try #require(store as? SQLOfferStore)
        let start: Int64 = 1_800_000_000_000 / day * day
        let history = randomHistory(count: 200, start: start, days: 5, using: &generator)
        for record in history { try await store.record(record) }
        // As version 10 left the database: no rollups.
        try await sql.backend.transaction { database in
            for table in ["issued_daily", "issued_customer_days", "issued_rollup_days"] { try await database.run("DROP TABLE \(unsafeRaw: table)") }
            try await database.run("ALTER TABLE redemptions DROP COLUMN period_of")
            try await database.run("DELETE FROM schema_migrations WHERE version = 11")
        }
        try await store.close()
        let (reopened, _) = try await Backend.sqlite.open(path: path)
        let marks = try await (reopened as? SQLOfferStore)?.backend.reading { database in
            try await database.raw("SELECT COUNT(*) AS n FROM issued_rollup_days").first(decodingColumn: "n", as: Int.self)
        }
        #expect(marks == 5, "every day of the log rolled by the migration")
        for (from, to) in windows(start: start, days: 5, using: &generator) {
            #expect(try await reported(reopened, from: from, to: to) == expected(history, from: from, to: to), "window \(from)..<\(to)")
        }
        try await reopened.close()
    }
}
