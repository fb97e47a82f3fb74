import Logging
import OfferModel
import PostgresNIO
import SQLKit

/// How replicas sharing PostgreSQL decide for one customer without a write transaction per decision: each replica
/// decides one at a time per customer under its in-process lock (``CustomerLocks``), reading the customer's facts
/// and signatures in one prepared statement (``Snapshots``, the reads of decisions made at once in one batch,
/// ``GroupRead``); the record then goes through a group-commit batch whose
/// own transaction — one call of a function (``recordCheckedFunction``), one round trip — takes an advisory lock per
/// customer of the batch (sorted, so two batches never wait for each other crosswise; the same lock a customer
/// transaction takes, ``lockStatement(for:)``) and inserts only the records whose customer still has the number of
/// signatures since the decision's read that it read: a signature committed since by any replica refuses the
/// record, which is then not written.
///
/// The lock is taken by a statement before the one that checks: under READ COMMITTED each statement of a volatile
/// function sees what was committed before it began, so the check sees every batch that held the lock before.
enum PostgresCustomerDecisions {
    /// The first key of the two-key advisory lock on a customer's issued signatures (the second: `hashtext` of the
    /// customer); other advisory locks of the store use other first keys.
    static let lockNamespace = 72_453_653

    /// The statement that takes `key`'s lock in a customer transaction (``SQLStoreBackend/lockIssued(_:on:)``).
    static func lockStatement(for key: CustomerKey) -> SQLQueryString {
        """
        SELECT pg_advisory_xact_lock(\(unsafeRaw: String(lockNamespace)), \
        hashtext(\(bind: key.bundleIdentifier) || chr(31) || \(bind: key.applicationUsername)))
        """
    }

    /// Inserts the batch's records whose check passes, in one round trip on `connection`: a call of
    /// ``recordCheckedFunction``, its own transaction (durable when it returns); returns those inserted (any other
    /// was refused by its check, or its nonce was recorded before).
    static func insert(_ checked: [CheckedRecord], connection: PostgresConnection) async throws -> Set<SQLOfferStore.RecordIdentity> {
        var inserted = Set<SQLOfferStore.RecordIdentity>()
        for try await (timestamp, nonce) in try await connection.execute(RecordChecked(checked: checked), logger: statementLogger) {
            inserted.insert(SQLOfferStore.RecordIdentity(timestamp: timestamp, nonce: nonce))
        }
        return inserted
    }

    /// The function schema version 22 creates: the advisory lock of each customer of the batch, in the order of the
    /// locks' keys, then the records whose customer has, since the read's time, as many signatures as the read
    /// found, inserted and counted into `issued_daily`; it returns the (timestamp, nonce) of each record inserted.
    /// The INSERT is a statement of a volatile function, so it reads the database as it is once the locks are held
    /// (a fresh snapshot a statement under READ COMMITTED): it sees every batch that held a lock before this one,
    /// as two statements of a transaction would — in one round trip instead of four (`BEGIN`, the locks, the
    /// insert, `COMMIT`).
    static let recordCheckedFunction = """
        CREATE OR REPLACE FUNCTION offer_signer_record_checked(
            TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], BIGINT[], BIGINT[])
        RETURNS TABLE (recorded_at BIGINT, recorded_nonce TEXT) LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock(\(lockNamespace), s.h) FROM (SELECT DISTINCT hashtext(c.b || chr(31) || c.u) AS h
                FROM unnest($3, $6) AS c(b, u) ORDER BY h) AS s;
            RETURN QUERY WITH inserted AS (INSERT INTO issued_signatures (\(IssuedSignatureInsert.columns))
            SELECT r.a1, r.a2, r.a3, r.a4, r.a5, r.a6, r.a7, r.a8, r.a9, r.a10
            FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) AS r(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, since, read)
            WHERE (SELECT count(*) FROM issued_signatures s WHERE s.bundle_identifier = r.a3
            AND s.application_username = r.a6 AND s.timestamp >= r.since) = r.read
            ON CONFLICT (timestamp, nonce) DO NOTHING
            \(IssuedSignatureInsert.countingDailyTail);
        END $$
        """

    /// A call of ``recordCheckedFunction`` with the batch as twelve arrays: the records' ten columns, each read's
    /// time and count.
    struct RecordChecked: PostgresPreparedStatement {
        static let name = "offer_signer_record_checked"
        static let sql = "SELECT recorded_at, recorded_nonce FROM offer_signer_record_checked($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
        static var bindingDataTypes: [PostgresDataType] { PostgresIssuedBatch.types + [.int8Array, .int8Array] }
        var checked: [CheckedRecord]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 12)
            PostgresIssuedBatch.appendColumns(of: checked.map(\.record), to: &bindings)
            bindings.append(checked.map(\.read.since))
            bindings.append(checked.map { Int64($0.read.count) })
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (Int64, String) { try row.decode((Int64, String).self) }
    }

    /// A customer's facts and signatures since a time (``SnapshotRequest``): its answer, the signatures newest first.
    typealias SnapshotAnswer = (facts: String?, issued: [IssuedSignature])

    /// What one decision reads: a customer, and since when (Unix ms) its signatures.
    struct SnapshotRequest: Sendable {
        var key: CustomerKey
        var since: Int64
    }

    /// The snapshots of every request, in one statement on a connection of its own (``GroupRead`` gathers the
    /// decisions' reads into such batches): one answer per request, in their order.
    static func snapshots(_ requests: [SnapshotRequest], client: PostgresConnections) async throws -> [SnapshotAnswer] {
        answers(requests, rows: try await client.execute(Snapshots(requests: requests)))
    }

    /// ``snapshots(_:client:)`` on a connection already leased (``GroupRead``'s batches, several on one lease).
    static func snapshots(_ requests: [SnapshotRequest], on connection: PostgresConnection, logger: Logger) async throws -> [SnapshotAnswer] {
        answers(requests, rows: try await connection.rowsIfOpen(Snapshots(requests: requests), logger: logger))
    }

    /// Each request's answer from the statement's rows.
    private static func answers(_ requests: [SnapshotRequest], rows: [Snapshots.Row]) -> [SnapshotAnswer] {
        var answers = [SnapshotAnswer](repeating: (nil, []), count: requests.count)
        for row in rows {
            // The request's place in the batch, as `WITH ORDINALITY` numbers it (from 1); any other is not ours.
            guard row.request >= 1, row.request <= Int64(requests.count) else { continue }
            let index = Int(row.request - 1)
            if let text = row.facts { answers[index].facts = text } else if let record = row.record { answers[index].issued.append(record) }
        }
        // Newest first, as every read of the log (the rows of a UNION come in no promised order).
        for index in answers.indices { answers[index].issued.sort { ($0.timestamp, $1.nonce) > ($1.timestamp, $0.nonce) } }
        return answers
    }

    /// Runs the statements with nothing to lock, read or write on `connection`, so that it has them prepared.
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.execute(RecordChecked(checked: []), logger: logger) {}
        for try await _ in try await connection.execute(Snapshots(requests: []), logger: logger) {}
    }

    private static let statementLogger = Logger(label: "offer-signer.postgres.batch", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Each request's customer's facts (one row, the signature's columns `NULL`) and their signatures since the
    /// request's time (one row each, `facts` `NULL`), each row with the request's place in the batch (from 1). The
    /// requests are three arrays (apps, customers, times) read back with `unnest … WITH ORDINALITY`; each is looked
    /// up by the customers' primary key and `issued_by_customer`. The lookups are `LATERAL` subqueries fenced with
    /// `OFFSET 0`, so that the plan is a lookup per request whatever the tables held when it was made: a plan made
    /// while `issued_signatures` was empty joined it by scanning it whole, every time, as it grew.
    struct Snapshots: PostgresPreparedStatement {
        static let name = "offer_signer_customer_snapshots"
        static let sql = """
            SELECT r.i, c.facts, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::int8, NULL::text, \
            NULL::text, NULL::text, false \
            FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS r(b, u, since, i) \
            CROSS JOIN LATERAL (SELECT facts FROM customers WHERE bundle_identifier = r.b AND application_username = r.u OFFSET 0) c \
            UNION ALL SELECT r.i, NULL::text, s.nonce, s.key_identifier, s.bundle_identifier, s.application_username, \
            s.product_identifier, s.offer_identifier, s.timestamp, s.format, s.channel, s.request_identifier, true \
            FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS r(b, u, since, i) \
            CROSS JOIN LATERAL (SELECT * FROM issued_signatures WHERE bundle_identifier = r.b AND application_username = r.u \
            AND timestamp >= r.since OFFSET 0) s
            """
        static var bindingDataTypes: [PostgresDataType] { [.textArray, .textArray, .int8Array] }
        var requests: [SnapshotRequest]
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 3)
            bindings.append(requests.map(\.key.bundleIdentifier))
            bindings.append(requests.map(\.key.applicationUsername))
            bindings.append(requests.map(\.since))
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> SnapshotRow {
            let (request, facts, nonce, keyIdentifier, bundle, username, product, offer, timestamp, format, channel, requestIdentifier, isRecord) =
                try row.decode((Int64, String?, String?, String?, String?, String?, String?, String?, Int64?, String?, String?, String?, Bool).self)
            guard isRecord, let nonce, let keyIdentifier, let bundle, let username, let product, let offer, let timestamp, let format, let channel
            else { return SnapshotRow(request: request, facts: facts, record: nil) }
            return SnapshotRow(
                request: request,
                facts: nil,
                record: IssuedSignature(
                    nonce: nonce,
                    keyIdentifier: keyIdentifier,
                    bundleIdentifier: bundle,
                    productIdentifier: product,
                    offerIdentifier: offer,
                    applicationUsername: username,
                    timestamp: timestamp,
                    format: format,
                    channel: channel,
                    requestIdentifier: requestIdentifier
                )
            )
        }
    }

    /// A row of ``Snapshots``: the request's place in the batch, and the facts or one signature.
    struct SnapshotRow: Sendable {
        var request: Int64
        var facts: String?
        var record: IssuedSignature?
    }
}
