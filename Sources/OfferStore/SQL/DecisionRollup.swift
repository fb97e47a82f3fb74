import OfferModel
import SQLKit

/// `decision_daily` (schema version 19): the decision log's decisions counted per UTC day and answer, so that a
/// range's refusal rate (the console's overview and Offers page) reads a row per day instead of every decision —
/// 333,000 index entries for 30 days of a million decisions.
///
/// Kept by every batch the decision log writes, in the batch's transaction, from the rows the batch actually inserted (`RETURNING`; on a SQLite file
/// the log writer's prepared statements, by the rows each INSERT changed): a batch written again after a failure whose outcome was unknown inserts
/// nothing twice, so it counts nothing twice. The counts outlive the log's purge (a day's row stays when its decisions are deleted);
/// ``SQLOfferStore/decisionCounts(since:until:)`` reads whole days here and the part of a day cut by the range from the log's `(decided_at, granted)`
/// index.
enum DecisionRollup {
    /// A decision as the batch's `INSERT … RETURNING` gives it back.
    struct Inserted: Decodable, Sendable {
        var decidedAt: Int64, granted: Int64
        private enum CodingKeys: String, CodingKey {
            case decidedAt = "decided_at"
            case granted
        }
    }

    /// A row of `decision_daily`: a UTC day (``IssuedRollup/dayOf(_:)``) and an answer (1 granted, 0 refused).
    struct Day: Hashable, Comparable {
        var day: Int64, granted: Int64
        static func < (lhs: Day, rhs: Day) -> Bool { (lhs.day, lhs.granted) < (rhs.day, rhs.granted) }
    }

    /// Adds the inserted decisions to their days' rows, in one statement, inside the caller's transaction. The rows
    /// go in one order (day, then answer), so two replicas' batches on PostgreSQL lock them in the same order.
    static func add(_ inserted: [Inserted], on database: any SQLDatabase) async throws {
        var counts: [Day: Int64] = [:]
        for row in inserted { counts[Day(day: IssuedRollup.dayOf(row.decidedAt), granted: row.granted == 0 ? 0 : 1), default: 0] += 1 }
        guard !counts.isEmpty else { return }
        var statement: SQLQueryString = "INSERT INTO decision_daily (day, granted, decisions) VALUES "
        for (index, entry) in counts.sorted(by: { $0.key < $1.key }).enumerated() {
            statement += index == 0 ? "(" : ", ("
            statement += "\(bind: entry.key.day), \(bind: entry.key.granted), \(bind: entry.value))"
        }
        statement += " ON CONFLICT (day, granted) DO UPDATE SET decisions = decision_daily.decisions + excluded.decisions"
        try await database.run(statement)
    }

    /// Schema version 19: the table, filled from the log as it stands.
    static func migration(bigint: SQLDataType) -> [SQLQueryString] {
        [
            """
            CREATE TABLE IF NOT EXISTS decision_daily (
                day \(bigint) NOT NULL, granted \(bigint) NOT NULL, decisions \(bigint) NOT NULL, PRIMARY KEY (day, granted))
            """,
            """
            INSERT INTO decision_daily (day, granted, decisions)
            SELECT decided_at / 86400000, CASE WHEN granted = 0 THEN 0 ELSE 1 END, COUNT(*) FROM policy_decisions
            GROUP BY decided_at / 86400000, CASE WHEN granted = 0 THEN 0 ELSE 1 END
            """,
        ]
    }
}
