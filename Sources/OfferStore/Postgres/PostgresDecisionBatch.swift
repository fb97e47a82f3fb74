import Logging
import OfferModel
import PostgresNIO

/// PostgreSQL's batch of the decision log (``SQLOfferStore/writeDecisions(_:backend:)``): one prepared statement whose
/// text never changes — each column of the batch bound as one array and read back with `unnest` — that inserts its
/// decisions, each with its facts snapshot, and adds those it inserted to `decision_daily`, in one round trip and one
/// transaction (the statement's own).
///
/// Through SQLKit the same batch was three statements of SQL text built a decision at a time (fifteen parameters
/// each), parsed and planned by the server every time, between `BEGIN` and `COMMIT`: five round trips, and its
/// `RETURNING` rows decoded through `Decodable`. What it writes is the same: a batch written again after a failure
/// whose outcome is unknown inserts no decision twice (`ON CONFLICT DO NOTHING`) and counts only the decisions the
/// statement inserted (`RETURNING`).
///
/// Its commit does not wait for the WAL's flush (`synchronous_commit` off for the statement's own transaction,
/// `set_config(…, true)`): the log's answer never waits for it, and a crash of the database can lose the decisions of
/// its last moment, as a crash of the server loses those still queued — never a signature, whose batches keep the
/// server's setting.
enum PostgresDecisionBatch {
    /// Writes `records` on `client`, durably when it returns.
    static func write(_ records: [PolicyDecisionRecord], client: PostgresConnections) async throws {
        _ = try await client.execute(Write(records: records))
    }

    /// Runs the statement with an empty batch on `connection` (it writes nothing), so that the connection has it
    /// prepared before the first batch (``PostgresBackend/warmUp()``).
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.execute(Write(records: []), logger: logger) {}
    }

    struct Write: PostgresPreparedStatement {
        static let name = "offer_signer_decision_batch_24"
        static let sql = """
            WITH inserted AS (INSERT INTO policy_decisions (\(columns)) \
            SELECT * FROM unnest($1::int8[], $2::int8[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
            $9::text[], $10::int8[], $11::text[], $12::int8[], $13::text[], $14::text[], $15::text[], $16::text[]) \
            ON CONFLICT (decided_at, id) DO NOTHING RETURNING decided_at, granted), \
            unflushed AS (SELECT set_config('synchronous_commit', 'off', true)) \
            INSERT INTO decision_daily (day, granted, decisions) \
            SELECT decided_at / \(IssuedRollup.day), CASE WHEN granted = 0 THEN 0 ELSE 1 END, COUNT(*) FROM inserted, unflushed \
            GROUP BY 1, 2 ORDER BY 1, 2 \
            ON CONFLICT (day, granted) DO UPDATE SET decisions = decision_daily.decisions + excluded.decisions
            """
        static var bindingDataTypes: [PostgresDataType] {
            [.int8Array, .int8Array] + Array(repeating: .textArray, count: 7)
                + [.int8Array, .textArray, .int8Array, .textArray, .textArray, .textArray, .textArray]
        }

        /// The columns of `policy_decisions` bound, in the order of the arrays `$1` to `$16`.
        static let columns = """
            decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, retention_entry, customer_hash, policy_version, \
            granted, reasons, lookback_seconds, facts_hash, experiment_identifier, experiment_variant, facts
            """

        var records: [PolicyDecisionRecord]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 16)
            bindings.append(records.map(\.decidedAt))
            bindings.append(records.map(\.identifier))
            bindings.append(records.map(\.channel))
            bindings.append(records.map(\.bundleIdentifier))
            bindings.append(records.map(\.productIdentifier))
            bindings.append(records.map(\.offerIdentifier))
            bindings.append(NullableTextArray(records.map(\.retentionEntry)))
            bindings.append(records.map(\.customerHash))
            bindings.append(records.map(\.policyVersion))
            bindings.append(records.map { Int64($0.granted ? 1 : 0) })
            bindings.append(records.map(\.reasons))
            bindings.append(records.map(\.lookbackSeconds))
            bindings.append(records.map(\.factsHash))
            bindings.append(NullableTextArray(records.map(\.experimentIdentifier)))
            bindings.append(NullableTextArray(records.map(\.experimentVariant)))
            bindings.append(records.map(\.factsSnapshot))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }
}
