/// The schema both stores share, as versioned migrations. SQL kept portable between SQLite and PostgreSQL;
/// only the 64-bit integer type differs. A migration is never edited once released: add a new version.
enum StoreSchema {
    static func migrations(integer64: String) -> [(version: Int, statements: [String])] {
        [
            (1, [
                """
                CREATE TABLE IF NOT EXISTS customers (
                    bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    facts TEXT NOT NULL, updated_at \(integer64) NOT NULL,
                    PRIMARY KEY (bundle_identifier, application_username))
                """,
                """
                CREATE TABLE IF NOT EXISTS customer_transactions (
                    original_transaction_id TEXT NOT NULL, bundle_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    PRIMARY KEY (original_transaction_id, bundle_identifier, application_username))
                """,
                "CREATE TABLE IF NOT EXISTS processed_notifications (notification_uuid TEXT PRIMARY KEY, processed_at \(integer64) NOT NULL)",
                """
                CREATE TABLE IF NOT EXISTS issued_signatures (
                    nonce TEXT PRIMARY KEY, key_identifier TEXT NOT NULL, bundle_identifier TEXT NOT NULL,
                    product_identifier TEXT NOT NULL, offer_identifier TEXT NOT NULL, application_username TEXT NOT NULL,
                    timestamp \(integer64) NOT NULL, format TEXT NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS issued_by_customer ON issued_signatures (bundle_identifier, application_username, timestamp)",
                "CREATE INDEX IF NOT EXISTS issued_by_key ON issued_signatures (key_identifier, timestamp)",
                "CREATE INDEX IF NOT EXISTS issued_by_time ON issued_signatures (timestamp)",
                """
                CREATE TABLE IF NOT EXISTS audit_events (
                    id TEXT PRIMARY KEY, at \(integer64) NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,
                    target TEXT NOT NULL, details TEXT NOT NULL)
                """,
                "CREATE INDEX IF NOT EXISTS audit_by_time ON audit_events (at)",
            ]),
            (2, [
                "CREATE TABLE IF NOT EXISTS documents (name TEXT PRIMARY KEY, body TEXT NOT NULL, updated_at \(integer64) NOT NULL)",
            ]),
        ]
    }
}
