import Foundation
import Logging

/// Opens the store `OFFER_SIGNER_DATABASE_URL` names and runs its migrations.
///
/// - `sqlite:PATH` — an embedded SQLite file (created if missing); `sqlite::memory:` for a throw-away store.
/// - `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (or `postgresql://`) — a PostgreSQL server, shared by replicas.
///
/// - Throws: ``OfferStoreError`` `invalidDatabaseURL` (the message never repeats a password), `unavailable`,
///   `migrationFailed`.
public func makeOfferStore(databaseURL: String, logger: Logger) async throws -> any OfferStore {
    if databaseURL.hasPrefix("sqlite:") {
        let path = String(databaseURL.dropFirst("sqlite:".count))
        guard !path.isEmpty else {
            throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL=sqlite: needs a path, as in sqlite:/var/lib/offer-signer/store.sqlite (or sqlite::memory:).")
        }
        return try await migrated(SQLOfferStore(backend: SQLiteBackend(path: path == ":memory:" ? nil : path, logger: logger), logger: logger))
    }
    if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
        let configuration = try PostgresBackend.configuration(databaseURL: databaseURL)
        return try await migrated(SQLOfferStore(backend: PostgresBackend(configuration: configuration, logger: logger), logger: logger))
    }
    let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
    throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL).")
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
