import Foundation
import SQLKit

/// Rolling `issued_customer_days` from the log (``IssuedRollup``): done for the days a report reads, when they are
/// missing or stale, and for every day of the log by the migration that made the table.
extension SQLOfferStore {
    /// Rolls the days of `days` whose customer rows are missing or stale. The log is read outside any write
    /// transaction (a SQLite file's signing goes on meanwhile); only the rows found are written, briefly.
    func rollUpCustomerDays(_ days: ClosedRange<Int64>) async throws {
        let (cumulative, rolled) = try await backend.reading { database in
            (try await Self.cumulativeIssued(through: days.upperBound, on: database), try await Self.rolledDays(days, on: database))
        }
        for run in Self.runs(of: days.filter { rolled[$0] != cumulative[$0] }) {
            // Read after the sums above: the rows seen include at least what the sums counted, so a day written
            // meanwhile is found stale again later, never taken for current.
            let rows = try await backend.reading { database in try await Self.customerDays(run, on: database) }
            try await backend.transaction { [backend] database in
                // One roller at a time across PostgreSQL clients (the outcome tables' advisory lock, under a key no
                // original transaction has); SQLite's write transactions already run one at a time.
                try await backend.lockSubscriptionOutcomes("issued-rollup", environment: "", on: database)
                try await Self.store(rows, cumulative: cumulative, days: run, on: database)
            }
        }
    }

    /// Rolls every day of the log, inside the migration's transaction (schema version 11).
    static func rollUpEveryDay(on database: any SQLDatabase) async throws {
        let bounds = try await database.raw("SELECT MIN(day) AS first, MAX(day) AS last FROM issued_daily").first(decoding: Bounds.self)
        guard let first = bounds?.first, let last = bounds?.last else { return }
        let cumulative = try await cumulativeIssued(through: last, on: database)
        // One run: nothing precedes it, so no customer is looked up before it.
        try await store(try await customerDays(first...last, on: database), cumulative: cumulative, days: first...last, on: database)
    }

    /// For every day up to `last`, the signatures issued on it and every day before (what a rolled day is checked
    /// against); days without any are absent before the first day of the log.
    static func cumulativeIssued(through last: Int64, on database: any SQLDatabase) async throws -> [Int64: Int64] {
        let statement: SQLQueryString = """
            SELECT day, CAST(SUM(issued) AS BIGINT) AS issued FROM issued_daily WHERE day <= \(bind: last) GROUP BY day ORDER BY day
            """
        var cumulative: [Int64: Int64] = [:]
        var total: Int64 = 0
        var previous: Int64?
        for row in try await database.raw(statement).all(decoding: DayCount.self) {
            // Days between two with signatures carry the running total too.
            if let previous, row.day > previous + 1 {
                for day in (previous + 1)..<row.day { cumulative[day] = total }
            }
            total += row.issued
            cumulative[row.day] = total
            previous = row.day
        }
        if let previous, previous < last {
            for day in (previous + 1)...last { cumulative[day] = total }
        }
        return cumulative
    }

    private static func rolledDays(_ days: ClosedRange<Int64>, on database: any SQLDatabase) async throws -> [Int64: Int64] {
        let statement: SQLQueryString = """
            SELECT day, cumulative AS issued FROM issued_rollup_days WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound)
            """
        return Dictionary(
            try await database.raw(statement).all(decoding: DayCount.self).map { ($0.day, $0.issued) },
            uniquingKeysWith: { first, _ in first }
        )
    }

    /// The contiguous runs of sorted days.
    private static func runs(of days: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for day in days {
            if let last = runs.last, last.upperBound + 1 == day {
                runs[runs.count - 1] = last.lowerBound...day
            } else {
                runs.append(day...day)
            }
        }
        return runs
    }

    /// The customer rows of `days`, from the log, in one sort: each customer's signatures of the run in time order,
    /// the first of each day kept with the day of the one before it (`LAG`), or for their first in the run the day
    /// of their latest signature before it (the customer index, newest first).
    private static func customerDays(_ days: ClosedRange<Int64>, on database: any SQLDatabase) async throws -> [CustomerDayRow] {
        let start = days.lowerBound * IssuedRollup.day
        let end = (days.upperBound + 1) * IssuedRollup.day
        let statement: SQLQueryString = """
            SELECT bundle_identifier, product_identifier, offer_identifier, channel, day, previous_day, COUNT(*) AS customers FROM (
              SELECT bundle_identifier, product_identifier, offer_identifier, channel, day, COALESCE(previous_in_run, (
                  SELECT MAX(s.timestamp) FROM issued_signatures s
                  WHERE s.bundle_identifier = r.bundle_identifier AND s.application_username = r.application_username
                    AND s.timestamp < \(bind: start) AND s.product_identifier = r.product_identifier
                    AND s.offer_identifier = r.offer_identifier AND s.channel = r.channel AND s.format <> 'introductory-eligibility'
                ) / 86400000, -1) AS previous_day
              FROM (
                SELECT bundle_identifier, product_identifier, offer_identifier, channel, application_username, timestamp / 86400000 AS day,
                  LAG(timestamp / 86400000) OVER (PARTITION BY bundle_identifier, product_identifier, offer_identifier, channel, application_username
                                                  ORDER BY timestamp) AS previous_in_run
                FROM issued_signatures
                WHERE timestamp >= \(bind: start) AND timestamp < \(bind: end) AND format <> 'introductory-eligibility'
              ) r
              WHERE previous_in_run IS NULL OR previous_in_run < day
            ) customer_days
            GROUP BY bundle_identifier, product_identifier, offer_identifier, channel, day, previous_day
            """
        return try await database.raw(statement).all(decoding: CustomerDayRow.self)
    }

    /// Replaces the customer rows and the marks of `days`.
    private static func store(
        _ rows: [CustomerDayRow],
        cumulative: [Int64: Int64],
        days: ClosedRange<Int64>,
        on database: any SQLDatabase
    ) async throws {
        try await database.run("DELETE FROM issued_customer_days WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound)")
        try await database.run("DELETE FROM issued_rollup_days WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound)")
        for chunk in stride(from: 0, to: rows.count, by: 1000).map({ rows[$0..<min($0 + 1000, rows.count)] }) {
            var statement: SQLQueryString = """
                INSERT INTO issued_customer_days (day, bundle_identifier, product_identifier, offer_identifier, channel, previous_day, customers) \
                VALUES
                """
            for (index, row) in chunk.enumerated() {
                statement += index == 0 ? " (" : ", ("
                statement +=
                    """
                    \(bind: row.day), \(bind: row.bundleIdentifier), \(bind: row.productIdentifier), \(bind: row.offerIdentifier), \
                    \(bind: row.channel), \(bind: row.previousDay), \(bind: row.customers))
                    """
            }
            try await database.run(statement)
        }
        let now = Date().unixMilliseconds
        let marks = Array(days)
        for chunk in stride(from: 0, to: marks.count, by: 1000).map({ marks[$0..<min($0 + 1000, marks.count)] }) {
            var statement: SQLQueryString = "INSERT INTO issued_rollup_days (day, cumulative, rolled_at) VALUES"
            for (index, day) in chunk.enumerated() {
                statement += index == 0 ? " (" : ", ("
                statement += "\(bind: day), \(bind: cumulative[day] ?? 0), \(bind: now))"
            }
            try await database.run(statement)
        }
    }

    private struct Bounds: Decodable {
        var first: Int64?, last: Int64?
    }

    private struct DayCount: Decodable {
        var day: Int64, issued: Int64
    }

    private struct CustomerDayRow: Decodable {
        var bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, channel: String
        var day: Int64, previousDay: Int64, customers: Int64
        enum CodingKeys: String, CodingKey {
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case channel, day
            case previousDay = "previous_day"
            case customers
        }
    }
}
