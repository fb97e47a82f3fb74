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
        let store = try await SQLiteOfferStore(path: path == ":memory:" ? nil : path, logger: logger)
        try await store.migrate()
        return store
    }
    if databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") {
        return try await makePostgresOfferStore(databaseURL: databaseURL, logger: logger)
    }
    let scheme = databaseURL.split(separator: ":").first.map(String.init) ?? ""
    throw OfferStoreError(code: .invalidDatabaseURL, message: "OFFER_SIGNER_DATABASE_URL must start with sqlite: or postgres:// (got a '\(scheme.prefix(20))' URL).")
}
