import Foundation
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
            return StoreActivity(lastSignature: signature.map(Date.init(unixMilliseconds:)), lastNotification: notification.map(Date.init(unixMilliseconds:)))
        }
    }

    func decisionCounts(since: Int64, until: Int64) async throws -> (granted: Int, refused: Int) {
        // What the log has written: no wait for the batch in flight (a page must not wait on the decision log's
        // queue, which under load or an outage can hold it for tens of seconds — 35 s seen on a loaded replica).
        let rows = try await backend.reading { database in
            try await database.select().column("granted").column(SQLFunction("COUNT", args: SQLLiteral.all), as: "decisions")
                .from("policy_decisions").where("decided_at", .greaterThanOrEqual, SQLBind(since)).where("decided_at", .lessThan, SQLBind(until))
                .groupBy("granted").all(decoding: Counted.self)
        }
        return rows.reduce(into: (granted: 0, refused: 0)) { counts, row in
            if row.granted != 0 { counts.granted += row.decisions } else { counts.refused += row.decisions }
        }
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
