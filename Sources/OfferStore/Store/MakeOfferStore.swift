import Foundation
import Logging
import PostgresNIO

/// Opens the store `OFFER_SIGNER_DATABASE_URL` names and runs its migrations (`migrating: false`: the caller runs
/// ``OfferStore/migrate()`` itself, as `serve` does after checking within a deadline that the database answers).
///
/// - `sqlite:PATH` — an embedded SQLite file (created if missing); `sqlite::memory:` for a throw-away store.
/// - `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (or `postgresql://`) — a PostgreSQL server, shared by replicas.
///
/// `keepingConnectionsOpen`: PostgreSQL's pool keeps a connection open an hour after its last use, and
/// ``OfferStore/warmUp()`` opens them all and prepares them (a server); otherwise connections close after a minute
/// idle.
///
/// `timeout` (`OFFER_SIGNER_STORE_TIMEOUT`): how long a call waits for the database before it fails `unavailable`
/// — PostgreSQL: for a connection (a database that does not answer is then taken as down, calls fail at once, and a
/// fresh pool serves as soon as it answers: ``PostgresConnections``); SQLite: for another process's lock on the
/// file (`busy_timeout`). It bounds the wait, not the work: a long report on a connection it has runs to its end.
///
/// `exclusive` (a server): a SQLite file is taken for this process for as long as the store is open
/// (``SQLiteFileLock``); a second server on it fails with `storeInUse`. The tools, which only read or write a
/// little, share it.
///
/// - Throws: ``OfferStoreError`` `invalidDatabaseURL` (the message never repeats a password), `unavailable`,
///   `migrationFailed`, `storeInUse`.
public func makeOfferStore(
    databaseURL: String,
    logger: Logger,
    migrating: Bool = true,
    keepingConnectionsOpen: Bool = false,
    timeout: Duration = defaultStoreTimeout,
    exclusive: Bool = false
) async throws -> any OfferStore {
    let store: SQLOfferStore
    switch try StoreLocation(databaseURL) {
    case .sqlite(let path):
        store = SQLOfferStore(
            backend: try await SQLiteBackend(path: path, logger: logger, busyTimeout: timeout, exclusive: exclusive),
            logger: logger
        )
    case .postgres(let configuration):
        store = SQLOfferStore(
            backend: PostgresBackend(
                configuration: configuration,
                logger: logger,
                keepingConnectionsOpen: keepingConnectionsOpen,
                waitLimit: timeout
            ),
            logger: logger,
            documentFeed: PostgresDocumentFeed(configuration: configuration, logger: logger)
        )
    }
    return migrating ? try await migrated(store) : store
}

/// How long a store call waits for the database by default (`OFFER_SIGNER_STORE_TIMEOUT`): a connection from
/// PostgreSQL's pool, another process's lock on a SQLite file.
public let defaultStoreTimeout: Duration = .seconds(2)

/// Checks that `databaseURL` names a store ``makeOfferStore(databaseURL:logger:migrating:keepingConnectionsOpen:)`` can
/// open, without opening it (`offer-signer config check`): the scheme, a SQLite path, a PostgreSQL URL's parts.
/// - Throws: ``OfferStoreError`` `invalidDatabaseURL`, with the message opening it would give.
public func checkDatabaseURL(_ databaseURL: String) throws(OfferStoreError) {
    _ = try StoreLocation(databaseURL)
}

/// What `OFFER_SIGNER_DATABASE_URL` names, read once for both opening a store and checking the URL.
private enum StoreLocation {
    /// A SQLite file; `nil` for `sqlite::memory:`.
    case sqlite(path: String?)
    case postgres(PostgresClient.Configuration)

    init(_ databaseURL: String) throws(OfferStoreError) {
        if databaseURL.hasPrefix("sqlite:") {
            let path = String(databaseURL.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw OfferStoreError(
                    .invalidDatabaseURL,
                    "OFFER_SIGNER_DATABASE_URL=sqlite: needs a path, as in sqlite:/var/lib/offer-signer/store.sqlite (or sqlite::memory:)."
                )
            }
            self = .sqlite(path: path == ":memory:" ? nil : path)
        } else if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
            self = .postgres(try PostgresBackend.configuration(databaseURL: databaseURL))
        } else {
            let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
            throw OfferStoreError(
                .invalidDatabaseURL,
                "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL)."
            )
        }
    }
}

/// The store, migrated; closed again if the migrations fail.
private func migrated(_ store: SQLOfferStore) async throws -> any OfferStore {
    do {
        try await store.migrate()
        return store
    } catch {
        try? await store.close()
        throw error
    }
}
