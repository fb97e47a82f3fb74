import Foundation
import Logging
import Metrics
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: the decision log (schema version 9)

    func logDecision(_ decision: PolicyDecisionRecord) {
        decisionRecorder.submit(decision) { result in
            // Logged by the writer (a batch given up) or the queue (full); counted here, one a decision.
            guard case .failure(let error) = result else { return }
            Counter(
                label: "offer_signer_decision_log_dropped_total",
                dimensions: [("reason", error is GroupCommitQueueFull ? "queue_full" : "not_written")]
            ).increment()
        }
    }

    /// The decision log's writer rides out a store that refuses connections or statements for a few seconds: a
    /// failed batch is written again after 0.1, 0.5 and 2 s (four attempts, idempotent: the decisions are keyed,
    /// each with its snapshot), and at most 10,000 decisions (about 10 MB) wait meanwhile. A batch given up, or a
    /// decision refused by a full queue, is logged and counted (`offer_signer_decision_log_dropped_total`).
    static func decisionLogRetry(
        logger: Logger,
        delays: [Duration] = [.milliseconds(100), .milliseconds(500), .seconds(2)],
        maximumQueued: Int = 10_000
    ) -> BatchRetry {
        BatchRetry(
            delays: delays,
            maximumQueued: maximumQueued,
            failed: { error, count, attempt, retryAfter in
                let metadata: Logger.Metadata = ["count": "\(count)", "attempt": "\(attempt)", "error": "\(error)"]
                if let retryAfter {
                    logger.warning(
                        "policy decision batch not written yet; retrying",
                        metadata: metadata.merging(["retry_in": "\(retryAfter)"]) { $1 }
                    )
                } else {
                    logger.error("policy decision batch not logged", metadata: metadata)
                }
            },
            full: { queued in
                logger.error(
                    """
                    policy decisions not logged: the decision log's queue is full while the store fails or falls behind; each is counted in \
                    offer_signer_decision_log_dropped_total
                    """,
                    metadata: ["queued": "\(queued)"]
                )
            }
        )
    }

    /// How long the decision log's writer waits for more decisions before it writes a batch
    /// (``GroupCommitQueue``'s `gather`): under load, one transaction for a few hundred decisions instead of a few —
    /// the pages they share (the tables' last pages, the day's count) written once. A decision is answered before it is
    /// logged either way; what waits in memory the longer is at most this much more (docs/store.md "The decision log").
    static let decisionGather = Duration.milliseconds(20)

    func flushDecisionLog() async {
        await decisionRecorder.drain()
    }

    /// Writes one batch of decisions in one transaction: the decisions, each with its facts snapshot, in one
    /// multi-row INSERT, then the days' counts of the decisions it inserted (``DecisionRollup``). Idempotent: written
    /// again after a failure whose outcome is unknown (a connection lost at `COMMIT`), nothing is doubled. A failure is
    /// logged by the queue's retry (``decisionLogRetry(logger:delays:maximumQueued:)``).
    /// A SQLite file's batches go through ``SQLiteLogWriter``'s statements, prepared once; PostgreSQL's are one prepared statement
    /// (``PostgresDecisionBatch``).
    ///
    /// The snapshot rides in the decision's own row (schema version 24), appended at the log's end with it: stored once
    /// per distinct text in `decision_facts`, by a random hash, each decision cost a page of that table's index of its
    /// own — on a SQLite file under `Benchmarks/Signing/policy.yaml`, about a fifth of a decision's cost.
    static func writeDecisions(_ records: [PolicyDecisionRecord], backend: any SQLStoreBackend) async throws -> [(any Error)?] {
        if let sqlite = backend as? SQLiteBackend, try await sqlite.writeDecisions(records) {
            return Array(repeating: nil, count: records.count)
        }
        if let write = backend.decisionBatchWriter {
            try await backend.mappingErrors { try await write(records) }
            return Array(repeating: nil, count: records.count)
        }
        try await backend.transaction { database in
            let inserted = try await database.insert(into: "policy_decisions")
                .columns(
                    "decided_at",
                    "id",
                    "channel",
                    "bundle_identifier",
                    "product_identifier",
                    "offer_identifier",
                    "retention_entry",
                    "customer_hash",
                    "policy_version",
                    "granted",
                    "reasons",
                    "lookback_seconds",
                    "facts_hash",
                    "experiment_identifier",
                    "experiment_variant",
                    "facts"
                )
                .rows(
                    records.map { record -> [any SQLExpression] in
                        [
                            SQLBind(record.decidedAt), SQLBind(record.identifier), SQLBind(record.channel),
                            SQLBind(record.bundleIdentifier), SQLBind(record.productIdentifier), SQLBind(record.offerIdentifier),
                            SQLBind(record.retentionEntry), SQLBind(record.customerHash), SQLBind(record.policyVersion),
                            SQLBind(Int64(record.granted ? 1 : 0)), SQLBind(record.reasons), SQLBind(record.lookbackSeconds),
                            SQLBind(record.factsHash), SQLBind(record.experimentIdentifier), SQLBind(record.experimentVariant),
                            SQLBind(record.factsSnapshot),
                        ]
                    }
                )
                .ignoringConflicts(with: ["decided_at", "id"])
                .returning("decided_at", "granted")
                .all(decoding: DecisionRollup.Inserted.self)
            // Last in the transaction: the day's rows stay locked (PostgreSQL) only until the commit.
            try await DecisionRollup.add(inserted, on: database)
        }
        return Array(repeating: nil, count: records.count)
    }

    func policyDecisions(
        bundleIdentifiers: [String],
        since: Int64,
        until: Int64,
        after cursor: PolicyDecisionCursor?,
        limit: Int
    ) async throws -> [PolicyDecisionRecord] {
        guard !bundleIdentifiers.isEmpty else { return [] }
        // Where the page starts: the cursor (or the window's start); the first condition on the primary key's
        // leading column lets both databases range-scan from there instead of from the window's start each page.
        let start = cursor ?? PolicyDecisionCursor(decidedAt: since, identifier: .min)
        let rows = try await backend.reading { database in
            try await database.raw(
                """
                SELECT \(unsafeRaw: DecisionRow.columns), facts FROM policy_decisions
                WHERE decided_at >= \(bind: max(since, start.decidedAt)) AND decided_at < \(bind: until)
                    AND (decided_at, id) > (\(bind: start.decidedAt), \(bind: start.identifier))
                    AND bundle_identifier IN (\(binds: bundleIdentifiers))
                ORDER BY decided_at, id LIMIT \(bind: max(1, min(limit, 10_000)))
                """
            ).all(decoding: DecisionRow.self)
        }
        return rows.map(\.record)
    }

    func decisionSnapshots(hashes: [String]) async throws -> [String: String] {
        guard !hashes.isEmpty else { return [:] }
        let wanted = Array(hashes.prefix(10_000))
        let rows = try await backend.reading { database in
            try await database.raw("SELECT hash, facts FROM decision_facts WHERE hash IN (\(binds: wanted))").all(decoding: SnapshotRow.self)
        }
        return Dictionary(rows.map { ($0.hash, $0.facts) }, uniquingKeysWith: { first, _ in first })
    }

    /// A `decision_facts` row.
    private struct SnapshotRow: Decodable, Sendable {
        var hash: String, facts: String
    }

    func purgeDecisionLog(before: Date) async throws -> Int {
        let cutoff = before.unixMilliseconds
        return try await backend.transaction { database in
            let decisions = try await database.delete(from: "policy_decisions")
                .where("decided_at", .lessThan, SQLBind(cutoff)).returning("id").all().count
            try await database.delete(from: "decision_facts").where("last_used_at", .lessThan, SQLBind(cutoff)).run()
            return decisions
        }
    }

    /// A `policy_decisions` row as the log's reads select it: ``columns``, and its facts snapshot when the read asks for
    /// it (a dry-run's pages; not the console's).
    struct DecisionRow: Decodable, Sendable {
        static let columns = """
            decided_at, id, channel, bundle_identifier, product_identifier, offer_identifier, retention_entry,
            customer_hash, policy_version, granted, reasons, lookback_seconds, facts_hash, experiment_identifier, experiment_variant
            """

        var decidedAt: Int64, identifier: Int64, channel: String, bundleIdentifier: String, productIdentifier: String
        var offerIdentifier: String, retentionEntry: String?, customerHash: String, policyVersion: String
        var granted: Int64, reasons: String, lookbackSeconds: Int64, factsHash: String
        var experimentIdentifier: String?, experimentVariant: String?
        /// The facts snapshot, when the read selects it and the decision keeps it in its row (schema version 24; a
        /// decision written before has its snapshot in `decision_facts`, ``decisionSnapshots(hashes:)``).
        var facts: String?

        private enum CodingKeys: String, CodingKey {
            case decidedAt = "decided_at"
            case identifier = "id"
            case channel
            case bundleIdentifier = "bundle_identifier"
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case retentionEntry = "retention_entry"
            case customerHash = "customer_hash"
            case policyVersion = "policy_version"
            case granted, reasons
            case lookbackSeconds = "lookback_seconds"
            case factsHash = "facts_hash"
            case experimentIdentifier = "experiment_identifier"
            case experimentVariant = "experiment_variant"
            case facts
        }

        /// The decision, with its facts snapshot when its row keeps it (empty otherwise: read on its own,
        /// ``decisionSnapshots(hashes:)``).
        var record: PolicyDecisionRecord {
            PolicyDecisionRecord(
                identifier: identifier,
                decidedAt: decidedAt,
                channel: channel,
                bundleIdentifier: bundleIdentifier,
                productIdentifier: productIdentifier,
                offerIdentifier: offerIdentifier,
                retentionEntry: retentionEntry,
                customerHash: customerHash,
                policyVersion: policyVersion,
                granted: granted != 0,
                reasons: reasons,
                lookbackSeconds: lookbackSeconds,
                factsHash: factsHash,
                factsSnapshot: facts ?? "",
                experimentIdentifier: experimentIdentifier,
                experimentVariant: experimentVariant
            )
        }
    }
}
