import OfferModel
import SQLKit

/// The rollups of the log that the outcome report reads instead of the log itself (schema version 11,
/// docs/outcomes.md "How the report counts"):
///
/// - `issued_daily`: signatures issued per UTC day, app, product, offer and channel (introductory-offer eligibility
///   aside), kept by every write of the log in the same transaction — one upsert per (day, offer) of a batch,
///   never one per record.
/// - `issued_customer_days`: per UTC day, offer and `previous_day`, how many customers were issued a signature for
///   that offer that day whose previous one for it was on `previous_day` (-1: none before). The distinct
///   customers of the days `[A, B]` are then exactly the sum over those days of the rows with `previous_day < A`:
///   each customer of the window counted once, on their first day in it. Rolled from the log per day, off the
///   signing path (``SQLOfferStore/rollUpCustomerDays(_:)``).
/// - `issued_rollup_days`: for each rolled day, the issued signatures of every day up to it when it was rolled. A
///   day's customer rows depend on the log up to that day only, so they are current exactly while that sum still
///   matches `issued_daily`; a signature written later for that day or an earlier one makes the day roll again.
enum IssuedRollup {
    /// Milliseconds in a UTC day.
    static let day: Int64 = 86_400_000
    /// The format whose records the report never counts.
    static let eligibilityFormat = "introductory-eligibility"

    /// One `issued_daily` increment.
    struct DailyCount: Hashable {
        var day: Int64, bundleIdentifier: String, productIdentifier: String, offerIdentifier: String, channel: String
    }

    /// The increments a batch of written records makes, one per (day, app, product, offer, channel).
    static func dailyCounts<S: Sequence>(of records: S) -> [DailyCount: Int64] where S.Element == IssuedSignature {
        var counts: [DailyCount: Int64] = [:]
        for record in records where record.format != eligibilityFormat {
            let key = DailyCount(
                day: dayOf(record.timestamp),
                bundleIdentifier: record.bundleIdentifier,
                productIdentifier: record.productIdentifier,
                offerIdentifier: record.offerIdentifier,
                channel: record.channel
            )
            counts[key, default: 0] += 1
        }
        return counts
    }

    /// How a window `[from, to)` (Unix ms, `0 <= from < to`) is counted from daily rows: the whole UTC days `days`
    /// from the rollup, and the parts of a first or last day the window cuts from the log — only when that day has
    /// rows outside the window (`anyOutside`, a time-index probe of the log); a cut day with none counts whole.
    /// `days` is `nil` when no day is left whole.
    static func split(
        from: Int64,
        to: Int64,
        anyOutside: (Range<Int64>) async throws -> Bool
    ) async rethrows -> (days: ClosedRange<Int64>?, parts: [Range<Int64>]) {
        var first = from / day
        var last = (to - 1) / day
        var parts: [Range<Int64>] = []
        if from > first * day, try await anyOutside(first * day..<from) {
            parts.append(from..<min(to, (first + 1) * day))
            first += 1
        }
        if first <= last, to < (last + 1) * day, try await anyOutside(to..<((last + 1) * day)) {
            parts.append(max(from, last * day)..<to)
            last -= 1
        }
        return (first <= last ? first...last : nil, parts)
    }

    /// The UTC day of Unix milliseconds, as the statements compute it (`timestamp / 86400000`, truncated).
    static func dayOf(_ milliseconds: Int64) -> Int64 {
        milliseconds / day
    }

    /// The upsert that adds to a row of `issued_daily` (`?` placeholders in the order of ``DailyCount``, then the
    /// count): the SQLite log writer's prepared statement.
    static let upsertText = "\(insertText) VALUES (?, ?, ?, ?, ?, ?) \(addOnConflict)"

    /// The start of every insert into `issued_daily`, before its rows.
    static let insertText = "INSERT INTO issued_daily (day, bundle_identifier, product_identifier, offer_identifier, channel, issued)"

    /// The end of every insert into `issued_daily`: a row that exists is added to.
    static let addOnConflict =
        """
        ON CONFLICT (day, bundle_identifier, product_identifier, offer_identifier, channel) DO UPDATE SET issued = issued_daily.issued + \
        excluded.issued
        """

    /// Adds a batch's increments to `issued_daily`, in one statement, inside the caller's transaction.
    static func add(_ records: [IssuedSignature], on database: any SQLDatabase) async throws {
        let counts = dailyCounts(of: records)
        guard !counts.isEmpty else { return }
        var statement: SQLQueryString = "\(unsafeRaw: insertText) VALUES "
        for (index, entry) in counts.enumerated() {
            let key = entry.key
            statement += index == 0 ? "(" : ", ("
            statement +=
                """
                \(bind: key.day), \(bind: key.bundleIdentifier), \(bind: key.productIdentifier), \(bind: key.offerIdentifier), \
                \(bind: key.channel), \(bind: entry.value))
                """
        }
        statement += " \(unsafeRaw: addOnConflict)"
        try await database.run(statement)
    }

    /// Schema version 11: the tables, `issued_daily` filled from the log; the customer days are rolled by
    /// ``SQLOfferStore/rollUpCustomerDays(_:)`` right after, in the migration's transaction.
    static func migration(bigint: SQLDataType) -> [SQLQueryString] {
        [
            """
            CREATE TABLE IF NOT EXISTS issued_daily (
                day \(bigint) NOT NULL, bundle_identifier TEXT NOT NULL, product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL,
                channel TEXT NOT NULL, issued \(bigint) NOT NULL,
                PRIMARY KEY (day, bundle_identifier, product_identifier, offer_identifier, channel))
            """,
            """
            CREATE TABLE IF NOT EXISTS issued_customer_days (
                day \(bigint) NOT NULL, bundle_identifier TEXT NOT NULL, product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL,
                channel TEXT NOT NULL, previous_day \(bigint) NOT NULL, customers \(bigint) NOT NULL,
                PRIMARY KEY (day, bundle_identifier, product_identifier, offer_identifier, channel, previous_day))
            """,
            "CREATE TABLE IF NOT EXISTS issued_rollup_days (day \(bigint) PRIMARY KEY, cumulative \(bigint) NOT NULL, rolled_at \(bigint) NOT NULL)",
            // A pay-as-you-go offer's later periods are kept too, each naming the redemption (its first period) it
            // continues; the report counts the rows that continue none (SQLOfferStore+Outcomes.swift, `relink`).
            "ALTER TABLE redemptions ADD COLUMN period_of TEXT",
            """
            INSERT INTO issued_daily (day, bundle_identifier, product_identifier, offer_identifier, channel, issued)
            SELECT timestamp / 86400000, bundle_identifier, product_identifier, offer_identifier, channel, COUNT(*)
            FROM issued_signatures WHERE format <> 'introductory-eligibility'
            GROUP BY timestamp / 86400000, bundle_identifier, product_identifier, offer_identifier, channel
            """,
        ]
    }
}
