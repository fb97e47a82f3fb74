import Foundation
import OfferModel
import SQLKit

/// The schema, as versioned migrations written once for both databases (`\(bigint)` is `BIGINT` on PostgreSQL,
/// `INTEGER` on SQLite), and the one runner that applies them. Every timestamp column holds Unix milliseconds.
/// A migration is never edited once released: add a new version.
enum StoreSchema {
    private static let bigint = SQLDataType.bigint

    static let migrations: [(version: Int, statements: [SQLQueryString])] = [
        (
            1,
            [
                """
                CREATE TABLE IF NOT EXISTS customers (
                    bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    facts TEXT NOT NULL, updated_at \(bigint) NOT NULL,
                    PRIMARY KEY (bundle_identifier, application_username))
                """,
                """
                CREATE TABLE IF NOT EXISTS customer_transactions (
                    original_transaction_id TEXT NOT NULL, bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    PRIMARY KEY (original_transaction_id, bundle_identifier, application_username))
                """,
                "CREATE TABLE IF NOT EXISTS processed_notifications (notification_uuid TEXT PRIMARY KEY, processed_at \(bigint) NOT NULL)",
                """
                CREATE TABLE IF NOT EXISTS issued_signatures (
                    nonce TEXT PRIMARY KEY, key_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL,
                    product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    timestamp \(bigint) NOT NULL, format TEXT NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp)",
                "CREATE INDEX IF NOT EXISTS issued_by_key ON issued_signatures (key_identifier, timestamp)",
                "CREATE INDEX IF NOT EXISTS issued_by_time ON issued_signatures (timestamp)",
                """
                CREATE TABLE IF NOT EXISTS audit_events (
                    id TEXT PRIMARY KEY, at \(bigint) NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
                    target TEXT NOT NULL, details TEXT NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS audit_by_time ON audit_events (at)",
            ]
        ),
        (
            2,
            [
                "CREATE TABLE IF NOT EXISTS documents (name TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at \(bigint) NOT NULL)"
            ]
        ),
        // schema_migrations.applied_at was written in seconds before this version; now in milliseconds like every
        // other timestamp. (A value below 10^11 is seconds: 10^11 ms is 1973, 10^11 s the year 5138.)
        (
            3,
            [
                "UPDATE schema_migrations SET applied_at = applied_at * 1000 WHERE applied_at < 100000000000"
            ]
        ),
        // Documents are changed by compare-and-set on this version (key states: issue 11), never overwritten blind.
        (
            4,
            [
                "ALTER TABLE documents ADD COLUMN version \(bigint) NOT NULL DEFAULT 0"
            ]
        ),
        // Retention Messaging (issue 14): who asked for a signature, the App Store's request identifier, and the
        // answer given to each real-time request, so a retried request gets the same answer without a second
        // signature.
        (
            5,
            [
                "ALTER TABLE issued_signatures ADD COLUMN channel TEXT NOT NULL DEFAULT 'api'",
                "ALTER TABLE issued_signatures ADD COLUMN request_identifier TEXT",
                """
                CREATE TABLE IF NOT EXISTS stored_answers (
                    answer_key TEXT PRIMARY KEY, answer TEXT NOT NULL, created_at \(bigint) NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS stored_answers_by_time ON stored_answers (created_at)",
            ]
        ),
        // The log's write amplification (issue 17, docs/PERFORMANCE.md "The log's write amplification"): a record
        // is identified by its (timestamp, nonce) pair — what its signature covers, so a record written twice is
        // still refused — whose index grows at its right edge, instead of by the random nonce alone, whose index
        // took a random page per record; that index also serves queries by time, so `issued_by_time` goes. On
        // SQLite a primary key cannot be changed in place: the table is rebuilt, its rows copied in time order.
        (
            6,
            [
                """
                CREATE TABLE issued_signatures_v6 (
                    nonce TEXT NOT NULL, key_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL,
                    product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    timestamp \(bigint) NOT NULL, format TEXT NOT NULL, channel TEXT NOT NULL DEFAULT 'api',
                    request_identifier TEXT, UNIQUE (timestamp, nonce))
                """,
                """
                INSERT INTO issued_signatures_v6 (nonce, key_identifier, bundle_identifier, product_identifier,
                    offer_identifier, application_username, timestamp, format, channel, request_identifier)
                SELECT nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier,
                    application_username, timestamp, format, channel, request_identifier
                FROM issued_signatures ORDER BY timestamp, nonce
                """,
                "DROP TABLE issued_signatures",
                "ALTER TABLE issued_signatures_v6 RENAME TO issued_signatures",
                "CREATE INDEX IF NOT EXISTS issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp)",
                "CREATE INDEX IF NOT EXISTS issued_by_key ON issued_signatures (key_identifier, timestamp)",
            ]
        ),
        // Bounded tables (issue 30): processed notification UUIDs are purged by age on a schedule, by this index.
        (
            7,
            [
                "CREATE INDEX IF NOT EXISTS processed_notifications_by_time ON processed_notifications (processed_at)"
            ]
        ),
        // Offer outcomes (issue 27, docs/outcomes.md): every transaction that carried an offer, once per
        // (environment, transaction), with the signature it is attributed to and what became of it; what happened to
        // subscriptions since (kept so that it counts whichever notification arrives first); the retention answers
        // given and whether the customer stayed.
        (
            8,
            [
                """
                CREATE TABLE IF NOT EXISTS redemptions (
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
                    bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL, product_identifier TEXT NOT NULL,
                    offer_type INTEGER NOT NULL, offer_identifier TEXT NOT NULL, offer_discount_type TEXT, offer_period TEXT,
                    price \(bigint), currency TEXT, storefront TEXT, purchase_date \(bigint) NOT NULL, recorded_at \(bigint) NOT NULL,
                    signature_nonce TEXT, signature_timestamp \(bigint), signature_channel TEXT,
                    renewed_at \(bigint), refunded_at \(bigint), expired_at \(bigint),
                    PRIMARY KEY (environment, transaction_id))
                """,
                "CREATE INDEX IF NOT EXISTS redemptions_by_time ON redemptions (purchase_date)",
                "CREATE INDEX IF NOT EXISTS redemptions_by_original ON redemptions (original_transaction_id, environment)",
                """
                CREATE TABLE IF NOT EXISTS subscription_events (
                    environment TEXT NOT NULL, original_transaction_id TEXT NOT NULL, kind TEXT NOT NULL, at \(bigint) NOT NULL,
                    transaction_id TEXT NOT NULL, recorded_at \(bigint) NOT NULL,
                    PRIMARY KEY (original_transaction_id, environment, kind, transaction_id, at))
                """,
                "CREATE INDEX IF NOT EXISTS subscription_events_by_time ON subscription_events (recorded_at)",
                """
                CREATE TABLE IF NOT EXISTS retention_answers (
                    bundle_identifier TEXT NOT NULL, request_identifier TEXT NOT NULL, environment TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL, product_identifier TEXT NOT NULL, offered INTEGER NOT NULL, answered_at \(bigint) NOT \
                NULL, saved_at \(bigint),
                    PRIMARY KEY (bundle_identifier, request_identifier))
                """,
                "CREATE INDEX IF NOT EXISTS retention_answers_by_time ON retention_answers (answered_at)",
                "CREATE INDEX IF NOT EXISTS retention_answers_by_original ON retention_answers (original_transaction_id, environment)",
            ]
        ),
        // The decision log (issue 28, docs/policy.md "Dry-run"): every decision made under a policy, with what it
        // was made on. The facts the rules read are stored once per distinct snapshot (`decision_facts`, by hash);
        // `last_used_at` is the newest decision that used it, so the purge drops snapshots with the decisions.
        // A decision is identified (and paged through) by its time and a random identifier.
        (
            9,
            [
                """
                CREATE TABLE IF NOT EXISTS policy_decisions (
                    decided_at \(bigint) NOT NULL, id \(bigint) NOT NULL, channel TEXT NOT NULL,
                    bundle_identifier TEXT NOT NULL, product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL,
                    retention_entry TEXT, customer_hash TEXT NOT NULL, policy_version TEXT NOT NULL,
                    granted \(bigint) NOT NULL, reasons TEXT NOT NULL, lookback_seconds \(bigint) NOT NULL,
                    facts_hash TEXT NOT NULL, PRIMARY KEY (decided_at, id))
                """,
                """
                CREATE TABLE IF NOT EXISTS decision_facts (
                    hash TEXT PRIMARY KEY, facts TEXT NOT NULL, last_used_at \(bigint) NOT NULL)
                """,
                // The scheduled purge (every 10 minutes) finds the snapshots no recent decision used by this index.
                "CREATE INDEX IF NOT EXISTS decision_facts_by_last_use ON decision_facts (last_used_at)",
            ]
        ),
        // Offer experiments (issue 28, docs/experiments.md): each customer's first exposure to an experiment.
        (
            10,
            [
                """
                CREATE TABLE IF NOT EXISTS experiment_exposures (
                    experiment_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    variant TEXT NOT NULL, exposed_at \(bigint) NOT NULL,
                    PRIMARY KEY (experiment_identifier, bundle_identifier, application_username))
                """,
                // The report joins each variant's customers to their redemptions.
                "CREATE INDEX IF NOT EXISTS redemptions_by_customer ON redemptions (bundle_identifier, application_username)",
            ]
        ),
        // The outcome report's rollups of the log (issue 27, ``IssuedRollup``, docs/outcomes.md "How the report
        // counts"): issued signatures per day and offer, filled from the log here and kept by every write of it;
        // the customer days, rolled from the log right after these statements (``rollUpEveryDay(on:)``).
        (11, IssuedRollup.migration(bigint: bigint)),
        // Retention answers recorded in one round trip on PostgreSQL (``PostgresAnswers/recordRetentionAnswers``):
        // the backend's own statements (``SQLStoreBackend/migrationStatements(version:)``), none on SQLite.
        (12, []),
        // One owner per transaction (issue 38, ``TransactionClaim``): the customer who first filed an original
        // transaction of an app and environment under them. `customer_transactions` keeps indexing who holds
        // which subscription; this table is the claim that refuses a second owner atomically.
        (
            13,
            [
                """
                CREATE TABLE IF NOT EXISTS transaction_owners (
                    bundle_identifier TEXT NOT NULL, environment TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
                    application_username TEXT NOT NULL, claimed_at \(bigint) NOT NULL,
                    PRIMARY KEY (bundle_identifier, environment, original_transaction_id))
                """
            ]
        ),
        // Console sessions every replica knows (issue 41, ``ConsoleSessionRecord``): by the SHA-256 of the cookie.
        (
            14,
            [
                """
                CREATE TABLE IF NOT EXISTS console_sessions (
                    digest TEXT PRIMARY KEY, admin TEXT NOT NULL, csrf_token TEXT NOT NULL, expires_at \(bigint) NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS console_sessions_by_expiry ON console_sessions (expires_at)",
            ]
        ),
        // Experiment metrics every variant can have (issue 42, docs/experiments.md): every transaction of an
        // auto-renewable subscription, offer or not, with its price, period and refund.
        (
            15,
            [
                """
                CREATE TABLE IF NOT EXISTS subscription_transactions (
                    environment TEXT NOT NULL, transaction_id TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
                    bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL, product_identifier TEXT NOT NULL,
                    subscription_group_identifier TEXT NOT NULL, price \(bigint), currency TEXT, purchase_date \(bigint) NOT NULL,
                    expires_date \(bigint), revocation_date \(bigint), recorded_at \(bigint) NOT NULL,
                    PRIMARY KEY (environment, transaction_id))
                """,
                """
                CREATE INDEX IF NOT EXISTS subscription_transactions_by_customer ON subscription_transactions (bundle_identifier, \
                application_username)
                """,
                """
                CREATE INDEX IF NOT EXISTS subscription_transactions_by_product ON subscription_transactions (bundle_identifier, \
                product_identifier)
                """,
            ]
        ),
        // The Retention Messaging catalogue at Apple (issue 43, ``RetentionCatalogueRecord``): each image and message
        // `retention sync` uploaded or found, per app and environment, with Apple's approval state.
        (
            16,
            [
                """
                CREATE TABLE IF NOT EXISTS retention_catalogue (
                    bundle_identifier TEXT NOT NULL, environment TEXT NOT NULL, kind TEXT NOT NULL, identifier TEXT NOT NULL,
                    name TEXT NOT NULL, state TEXT NOT NULL, sent_at \(bigint), checked_at \(bigint) NOT NULL,
                    PRIMARY KEY (bundle_identifier, environment, kind, identifier))
                """
            ]
        ),
        // The scheduled purge of `subscription_transactions` by purchase date (docs/store.md "Bounded tables").
        (
            17,
            [
                "CREATE INDEX IF NOT EXISTS subscription_transactions_by_purchase ON subscription_transactions (purchase_date)"
            ]
        ),
        // The decision log keeps the experiment and variant each decision got (issue 45, docs/policy.md "Dry-run"): a
        // dry-run of a candidate that keeps a running experiment replays it with them.
        (
            18,
            [
                "ALTER TABLE policy_decisions ADD COLUMN experiment_identifier TEXT",
                "ALTER TABLE policy_decisions ADD COLUMN experiment_variant TEXT",
                // The overview's refusal rate counts a range's decisions by answer from this index alone (SQLite read each
                // row of the table for its answer: 35,000 lookups for 30 days of 105,000 decisions).
                "CREATE INDEX IF NOT EXISTS policy_decisions_by_time_answer ON policy_decisions (decided_at, granted)",
            ]
        ),
        // The decision log's decisions per UTC day and answer (issue 45, ``DecisionRollup``): a range's refusal rate
        // from a row a day, kept by every batch the log writes.
        (19, DecisionRollup.migration(bigint: bigint)),
        // Rate limits the replicas share (issue 41, ``SharedLimitStore``): PostgreSQL's own statements
        // (``SQLStoreBackend/migrationStatements(version:)``); a SQLite file serves one process and keeps its limits there.
        (20, []),
        // The redemptions the outcome report counts, per UTC day and offer (issue 45, ``RedemptionRollup``): the
        // console's Offers page reads a row per day and offer instead of every redemption of its range.
        (21, RedemptionRollup.migration(bigint: bigint)),
        // A batch of decided records checked and recorded in one round trip on PostgreSQL
        // (``PostgresCustomerDecisions/recordCheckedFunction``): the backend's own statements, none on SQLite.
        (22, []),
        // A burst of App Store notifications filed in two statements a batch on PostgreSQL
        // (``PostgresNotificationBatch/lockFunction``, ``PostgresNotificationBatch/writeFunction``): the backend's own
        // statements, none on SQLite.
        (23, []),
        // The decision log keeps each decision's facts snapshot in its own row (``SQLOfferStore/writeDecisions(_:backend:)``):
        // appended with the decision instead of upserted into `decision_facts` by a random hash, whose index cost each
        // decision a page of its own. `decision_facts` keeps the snapshots of the decisions written before, read by
        // their hash until the purge drops them.
        (24, ["ALTER TABLE policy_decisions ADD COLUMN facts TEXT"]),
    ]

    /// The versions `schema_migrations` lists, read without the migration lock; throws where the table is missing.
    private static func appliedVersions(_ backend: any SQLStoreBackend) async throws -> Set<Int> {
        try await backend.patiently { database in
            Set(try await database.select().column("version").from("schema_migrations").all(decodingColumn: "version", as: Int.self))
        }
    }

    static let migrationsTable: SQLQueryString =
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at \(bigint) NOT NULL)"

    /// Applies every migration not yet applied, each version in one transaction together with its
    /// `schema_migrations` row, under the backend's migration lock: safe to run on every start and from several
    /// processes at once.
    static func migrate(_ backend: any SQLStoreBackend) async throws {
        do {
            // Every start but the first finds every version applied: nothing to lock, no replica waits for another.
            if let applied = try? await appliedVersions(backend), applied.isSuperset(of: migrations.map(\.version)) { return }
            for migration in migrations {
                // Waiting for another process's migration is not a database gone silent, however long it takes.
                try await backend.transaction(patient: true) { database in
                    try await backend.lockMigrations(on: database)
                    try await database.run(migrationsTable)
                    let applied = try await database.select().column("version").from("schema_migrations")
                        .where("version", .equal, migration.version).first()
                    guard applied == nil else { return }
                    for statement in migration.statements + backend.migrationStatements(version: migration.version) {
                        try await database.run(statement)
                    }
                    if migration.version == 11 { try await SQLOfferStore.rollUpEveryDay(on: database) }
                    try await database.insert(into: "schema_migrations").columns("version", "applied_at")
                        .values(SQLBind(migration.version), SQLBind(Date().unixMilliseconds)).run()
                }
            }
        } catch {
            let detail = (error as? OfferStoreError)?.message ?? backend.describe(error)
            throw OfferStoreError(.migrationFailed, "\(backend.name) migration failed: \(detail)")
        }
    }
}

extension Date {
    /// Unix milliseconds, the unit of every timestamp column.
    var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The date of Unix milliseconds.
    init(unixMilliseconds: Int64) { self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000) }
}
