import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore: StoreActivityReporting {
    /// The newest `issued_signatures.timestamp` and `processed_notifications.processed_at`: each a `MAX` its table's
    /// time index answers (the `(timestamp, nonce)` key, `processed_notifications_by_time`) without a scan.
    func latestActivity() async throws -> StoreActivity {
        try await backend.reading { database in
            let signature = try await database.select().column(SQLFunction("MAX", args: SQLIdentifier("timestamp")), as: "latest")
                .from("issued_signatures").first(decoding: Latest.self)?.latest
            let notification = try await database.select().column(SQLFunction("MAX", args: SQLIdentifier("processed_at")), as: "latest")
                .from("processed_notifications").first(decoding: Latest.self)?.latest
            return StoreActivity(
                lastSignature: signature.map(Date.init(unixMilliseconds:)),
                lastNotification: notification.map(Date.init(unixMilliseconds:))
            )
        }
    }

    /// The range's decisions by answer: its whole UTC days from `decision_daily` (``DecisionRollup``, a row a day and
    /// answer), and a first or last day cut by the range that has decisions outside it from the log's
    /// `(decided_at, granted)` index — so the log is read for at most two part days, as ``issuedTotal(_:on:)`` reads
    /// the signature log.
    func decisionCounts(since: Int64, until: Int64) async throws -> (granted: Int, refused: Int) {
        // What the log has written: no wait for the batch in flight (a page must not wait on the decision log's
        // queue, which under load or an outage can hold it for tens of seconds — 35 s seen on a loaded replica).
        let since = max(since, 0)
        guard since < until else { return (0, 0) }
        return try await backend.reading { database in
            let (days, parts) = try await IssuedRollup.split(from: since, to: until) { try await Self.anyDecision($0, on: database) }
            var rows: [Counted] = []
            for part in parts { rows += try await Self.loggedDecisions(part, on: database) }
            if let days {
                rows += try await database.raw(
                    """
                    SELECT granted, CAST(SUM(decisions) AS BIGINT) AS decisions FROM decision_daily
                    WHERE day >= \(bind: days.lowerBound) AND day <= \(bind: days.upperBound) GROUP BY granted
                    """
                ).all(decoding: Counted.self)
            }
            return rows.reduce(into: (granted: 0, refused: 0)) { counts, row in
                if row.granted != 0 { counts.granted += row.decisions } else { counts.refused += row.decisions }
            }
        }
    }

    /// Whether the log holds a decision in the range (its time index, one entry read).
    private static func anyDecision(_ range: Range<Int64>, on database: any SQLDatabase) async throws -> Bool {
        try await database.raw(
            """
            SELECT decided_at FROM policy_decisions WHERE decided_at >= \(bind: range.lowerBound) AND decided_at < \(bind: range.upperBound) LIMIT 1
            """
        ).first() != nil
    }

    /// The log's decisions of part of a day, by answer, from its `(decided_at, granted)` index.
    private static func loggedDecisions(_ range: Range<Int64>, on database: any SQLDatabase) async throws -> [Counted] {
        try await database.select().column("granted").column(SQLFunction("COUNT", args: SQLLiteral.all), as: "decisions")
            .from("policy_decisions").where("decided_at", .greaterThanOrEqual, SQLBind(range.lowerBound))
            .where("decided_at", .lessThan, SQLBind(range.upperBound))
            .groupBy("granted").all(decoding: Counted.self)
    }

    /// Decisions counted by their answer.
    private struct Counted: Decodable, Sendable {
        var granted: Int64, decisions: Int
    }

    /// A `MAX(…)` of milliseconds, `NULL` for an empty table.
    private struct Latest: Decodable, Sendable {
        var latest: Int64?
    }
}
