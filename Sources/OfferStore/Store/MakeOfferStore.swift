import Foundation
import Logging

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
    if databaseURL.hasPrefix("sqlite:") {
        let path = String(databaseURL.dropFirst("sqlite:".count))
        guard !path.isEmpty else {
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL=sqlite: needs a path, as in sqlite:/var/lib/offer-signer/store.sqlite (or sqlite::memory:).")
        }
        let store = SQLOfferStore(backend: try await SQLiteBackend(path: path == ":memory:" ? nil : path, logger: logger), logger: logger)
        return migrating ? try await migrated(store) : store
    }
    if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
        let configuration = try PostgresBackend.configuration(databaseURL: databaseURL)
        let store = SQLOfferStore(backend: PostgresBackend(configuration: configuration, logger: logger, keepingConnectionsOpen: keepingConnectionsOpen), logger: logger)
        return migrating ? try await migrated(store) : store
    }
    let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
    throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL).")
}

/// Checks that `databaseURL` names a store ``makeOfferStore(databaseURL:logger:migrating:keepingConnectionsOpen:)`` can
/// open, without opening it (`offer-signer config check`): the scheme, a SQLite path, a PostgreSQL URL's parts.
/// - Throws: ``OfferStoreError`` `invalidDatabaseURL`, with the message opening it would give.
public func checkDatabaseURL(_ databaseURL: String) throws(OfferStoreError) {
    if databaseURL.hasPrefix("sqlite:") {
        guard databaseURL != "sqlite:" else {
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL=sqlite: needs a path, as in sqlite:/var/lib/offer-signer/store.sqlite (or sqlite::memory:).")
        }
    } else if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
        _ = try PostgresBackend.configuration(databaseURL: databaseURL)
    } else {
        let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
        throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL).")
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
