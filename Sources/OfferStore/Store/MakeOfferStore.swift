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
/// - Throws: ``OfferStoreError`` `invalidDatabaseURL` (the message never repeats a password), `unavailable`,
///   `migrationFailed`.
public func makeOfferStore(databaseURL: String, logger: Logger, migrating: Bool = true, keepingConnectionsOpen: Bool = false) async throws -> any OfferStore {
    let store: SQLOfferStore
    switch try StoreLocation(databaseURL) {
    case .sqlite(let path):
        store = SQLOfferStore(backend: try await SQLiteBackend(path: path, logger: logger), logger: logger)
    case .postgres(let configuration):
        store = SQLOfferStore(backend: PostgresBackend(configuration: configuration, logger: logger, keepingConnectionsOpen: keepingConnectionsOpen), logger: logger)
    }
    return migrating ? try await migrated(store) : store
}

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
                throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL=sqlite: needs a path, as in sqlite:/var/lib/offer-signer/store.sqlite (or sqlite::memory:).")
            }
            self = .sqlite(path: path == ":memory:" ? nil : path)
        } else if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
            self = .postgres(try PostgresBackend.configuration(databaseURL: databaseURL))
        } else {
            let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL).")
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
