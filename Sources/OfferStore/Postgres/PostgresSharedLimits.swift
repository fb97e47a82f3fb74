import Logging
import OfferModel
import PostgresNIO

/// ``SharedLimitStore`` on PostgreSQL: the table `shared_limits` (schema 20), one row a bucket holding its tokens as
/// of `refilled_at` (seconds, the database's clock). A batch of leases is one `INSERT … ON CONFLICT DO UPDATE …
/// RETURNING` over arrays: each row is locked, refilled, taken from and returned in the one statement, so replicas
/// leasing from one bucket at once serialize on its row and never both spend a token.
struct PostgresSharedLimits: SharedLimitStore {
    let connections: PostgresConnections

    /// The table, created by migration 19 on PostgreSQL only.
    static let table = """
        CREATE TABLE IF NOT EXISTS shared_limits (
            bucket TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, burst DOUBLE PRECISION NOT NULL,
            rate DOUBLE PRECISION NOT NULL, refilled_at DOUBLE PRECISION NOT NULL, granted BIGINT NOT NULL,
            full_at DOUBLE PRECISION NOT NULL)
        """
    /// The purge finds the buckets full again by this index.
    static let index = "CREATE INDEX IF NOT EXISTS shared_limits_by_full ON shared_limits (full_at)"

    private static let logger = Logger(label: "offer-signer.postgres.limits", factory: { _ in SwiftLogNoOpLogHandler() })

    func lease(_ leases: [SharedLimitLease]) async throws -> [SharedLimitGrant] {
        guard !leases.isEmpty else { return [] }
        // One lease a bucket: a statement may not update one row twice.
        var wanted: [String: Int] = [:]
        var first: [String: SharedLimitLease] = [:]
        for lease in leases {
            wanted[lease.bucket, default: 0] += max(lease.wanted, 0)
            if first[lease.bucket] == nil { first[lease.bucket] = lease }
        }
        let buckets = Array(first.keys)
        let rates = buckets.map { max(first[$0]!.rate, 1e-9) }
        let bursts = buckets.map { max(first[$0]!.burst, 1) }
        let counts = buckets.map { Int64(min(wanted[$0]!, 1_000_000)) }
        // refilled: the bucket's tokens now. EXCLUDED.granted carries the tokens wanted (at most the burst).
        let refilled = "least(EXCLUDED.burst, s.tokens + greatest(0, EXCLUDED.refilled_at - s.refilled_at) * EXCLUDED.rate)"
        let given = "least(EXCLUDED.granted::float8, floor(\(refilled)))"
        let query: PostgresQuery = """
            WITH now AS (SELECT extract(epoch FROM clock_timestamp())::float8 AS t)
            INSERT INTO shared_limits AS s (bucket, tokens, burst, rate, refilled_at, granted, full_at)
            SELECT a.bucket, a.burst - least(a.wanted, floor(a.burst)), a.burst, a.rate, now.t,
                least(a.wanted, floor(a.burst))::int8, now.t + least(a.wanted, floor(a.burst)) / a.rate
            FROM unnest(\(buckets)::text[], \(rates)::float8[], \(bursts)::float8[], \(counts)::int8[]) AS a(bucket, rate, burst, wanted), now
            ON CONFLICT (bucket) DO UPDATE SET
                granted = \(unescaped: given)::int8,
                tokens = \(unescaped: refilled) - \(unescaped: given),
                full_at = EXCLUDED.refilled_at + (EXCLUDED.burst - (\(unescaped: refilled) - \(unescaped: given))) / EXCLUDED.rate,
                burst = EXCLUDED.burst, rate = EXCLUDED.rate, refilled_at = EXCLUDED.refilled_at
            RETURNING bucket, granted, tokens, rate
            """
        let answers = try await connections.withConnection { connection in
            var answers: [String: SharedLimitGrant] = [:]
            for try await (bucket, granted, tokens, rate) in try await connection.queryIfOpen(query, logger: Self.logger)
                .decode((String, Int64, Double, Double).self)
            {
                answers[bucket] = SharedLimitGrant(granted: Int(granted), secondsToNextToken: tokens >= 1 ? 0 : (1 - tokens) / rate)
            }
            return answers
        }
        // Each bucket's grant to its leases in order (one lease a bucket is what the caller sends).
        var remaining = answers
        return leases.map { lease in
            guard var answer = remaining[lease.bucket] else { return SharedLimitGrant(granted: 0, secondsToNextToken: 1) }
            let given = min(answer.granted, max(lease.wanted, 0))
            answer.granted -= given
            remaining[lease.bucket] = answer
            return SharedLimitGrant(granted: given, secondsToNextToken: answer.secondsToNextToken)
        }
    }

    func giveBack(_ tokens: [(bucket: String, count: Int)]) async throws {
        let returned = tokens.filter { $0.count > 0 }
        guard !returned.isEmpty else { return }
        var counts: [String: Int64] = [:]
        for (bucket, count) in returned { counts[bucket, default: 0] += Int64(min(count, 1_000_000)) }
        let buckets = Array(counts.keys)
        let values = buckets.map { counts[$0]! }
        let query: PostgresQuery = """
            UPDATE shared_limits AS s SET tokens = least(s.burst, s.tokens + r.n),
                full_at = s.refilled_at + (s.burst - least(s.burst, s.tokens + r.n)) / s.rate
            FROM unnest(\(buckets)::text[], \(values)::int8[]) AS r(bucket, n) WHERE s.bucket = r.bucket
            """
        try await connections.withConnection { connection in
            _ = try await connection.queryIfOpen(query, logger: Self.logger)
        }
    }

    func purgeFullBuckets() async throws {
        try await connections.withConnection { connection in
            _ = try await connection.queryIfOpen(
                "DELETE FROM shared_limits WHERE full_at < extract(epoch FROM clock_timestamp()) - 60",
                logger: Self.logger
            )
        }
    }
}
