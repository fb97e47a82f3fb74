import OfferModel
import SQLKit

extension SQLOfferStore: CustomerLockingStore {
    /// The lock per customer when this process is the only one deciding for the store's customers: a SQLite file a
    /// server holds (``SQLiteFileLock``) or a database in memory. PostgreSQL (replicas) and a file the tools opened
    /// beside a server: `nil`.
    var customerLocks: CustomerLocks? {
        (backend as? SQLiteBackend)?.decidesAlone == true ? processCustomerLocks : nil
    }

    /// The facts and the signatures, two statements on one read connection: for a SQLite file, statements prepared
    /// once per connection (``SQLiteCustomerReaders``).
    func customerSnapshot(_ key: CustomerKey, issuedSince since: Int64) async throws -> CustomerLockSnapshot {
        if let readers = (backend as? SQLiteBackend)?.customerReaders {
            let (text, issued) = try await readers.snapshot(key, issuedSince: since)
            let facts = try text.map { try StoreCoding.decode(CustomerFacts.self, from: $0) }
            return CustomerLockSnapshot(facts: facts, storedFacts: text, issued: issued)
        }
        let (text, issued) = try await backend.reading { database in
            let text = try await database.select().column("facts").from("customers").where(customer: key)
                .first(decodingColumn: "facts", as: String.self)
            let query = IssuedSignatureQuery(bundleIdentifier: key.bundleIdentifier, applicationUsername: key.applicationUsername, since: since)
            return (text, try await Self.selectSignatures(query, limit: nil, on: database))
        }
        let facts = try text.map { try StoreCoding.decode(CustomerFacts.self, from: $0) }
        return CustomerLockSnapshot(facts: facts, storedFacts: text, issued: issued)
    }
}
