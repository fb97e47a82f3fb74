import Foundation
import Logging
import OfferModel
import SQLKit

extension SQLPredicateBuilder {
    /// Narrows to one customer's rows.
    @discardableResult
    func `where`(customer key: CustomerKey) -> Self {
        self.where("bundle_identifier", .equal, key.bundleIdentifier).where("application_username", .equal, key.applicationUsername)
    }

    /// Narrows to the issued signatures a query matches (its `limit` aside).
    @discardableResult
    func `where`(_ query: IssuedSignatureQuery) -> Self {
        let columns = [
            ("bundle_identifier", query.bundleIdentifier), ("application_username", query.applicationUsername),
            ("product_identifier", query.productIdentifier), ("offer_identifier", query.offerIdentifier),
            ("key_identifier", query.keyIdentifier),
        ]
        for case let (column, value?) in columns { self.where(column, .equal, value) }
        if let since = query.since { self.where("timestamp", .greaterThanOrEqual, since) }
        if let until = query.until { self.where("timestamp", .lessThan, until) }
        return self
    }
}

/// The group commit's statement, `INSERT INTO issued_signatures (…) VALUES (…), (…)` — with `ignoringDuplicates`, followed by `ON CONFLICT
/// (timestamp, nonce) DO NOTHING RETURNING timestamp, nonce` — as the query builder renders it for both dialects (`.ignoringConflicts(with:)`,
/// `.returning(_:)`), written out: the builder's generic rows (an expression per value, each identifier escaped again for every statement) cost
/// several microseconds per record on the hot path. The values are still bound with the dialect's placeholders.
struct IssuedSignatureInsert: SQLExpression {
    var records: [IssuedSignature]
    /// Skip the records written before and return those inserted, instead of failing the statement on the first.
    var ignoringDuplicates: Bool
    /// Add the records inserted to `issued_daily` in the same statement (``IssuedRollup``; a data-modifying `WITH`,
    /// PostgreSQL's): where a batch is one statement, not a transaction.
    var countingDaily = false
    /// Data-modifying `WITH` clauses (`name AS (...)`, PostgreSQL's) run in the same statement as the insert.
    var preceding: SQLQueryString? = nil

    /// The columns a record fills, in the order its values are bound (also ``SQLiteLogWriter``'s INSERT).
    static let columns =
        """
        nonce, key_identifier, bundle_identifier, product_identifier, offer_identifier, application_username, timestamp, format, channel, \
        request_identifier
        """

    func serialize(to serializer: inout SQLSerializer) {
        if let preceding {
            serializer.write("WITH ")
            preceding.serialize(to: &serializer)
            serializer.write(countingDaily ? ", inserted AS (" : " ")
        } else if countingDaily {
            serializer.write("WITH inserted AS (")
        }
        serializer.write("INSERT INTO issued_signatures (\(Self.columns)) VALUES ")
        for (index, record) in records.enumerated() {
            serializer.write(index == 0 ? "(" : ", (")
            serializer.write(bind: record.nonce)
            for value in [
                record.keyIdentifier, record.bundleIdentifier, record.productIdentifier, record.offerIdentifier, record.applicationUsername,
            ] {
                serializer.write(", ")
                serializer.write(bind: value)
            }
            serializer.write(", ")
            serializer.write(bind: record.timestamp)
            serializer.write(", ")
            serializer.write(bind: record.format)
            serializer.write(", ")
            serializer.write(bind: record.channel)
            serializer.write(", ")
            serializer.write(bind: record.requestIdentifier)
            serializer.write(")")
        }
        if ignoringDuplicates { serializer.write(" ON CONFLICT (timestamp, nonce) DO NOTHING") }
        if countingDaily {
            // Rows in the order of the table's key, so that two batches at once lock them in one order.
            serializer.write(Self.countingDailyTail)
        } else if ignoringDuplicates {
            serializer.write(" RETURNING timestamp, nonce")
        }
    }

    /// The rest of the statement with ``countingDaily``: the records inserted, counted into `issued_daily`.
    static let countingDailyTail = """
         RETURNING timestamp, nonce, bundle_identifier, product_identifier, offer_identifier, channel, format), \
        counted AS (\(IssuedRollup.insertText) \
        SELECT timestamp / 86400000, bundle_identifier, product_identifier, offer_identifier, channel, COUNT(*) FROM inserted \
        WHERE format <> '\(IssuedRollup.eligibilityFormat)' \
        GROUP BY timestamp / 86400000, bundle_identifier, product_identifier, offer_identifier, channel ORDER BY 1, 2, 3, 4, 5 \
        \(IssuedRollup.addOnConflict)) \
        SELECT timestamp, nonce FROM inserted
        """
}

extension OfferStoreError {
    /// A signature with this nonce was recorded before.
    static func duplicateNonce(_ nonce: String) -> OfferStoreError {
        OfferStoreError(.duplicateNonce, "A signature with nonce \(nonce) was recorded before.")
    }
}

extension SQLOfferStore {
    func issuedSignatures(matching query: IssuedSignatureQuery) async throws -> [IssuedSignature] {
        try await backend.reading { database in
            try await Self.selectSignatures(query, limit: max(query.limit, 0), on: database)
        }
    }

    /// Issued signatures matching `query`, newest first, at most `limit` (`nil`: all).
    static func selectSignatures(_ query: IssuedSignatureQuery, limit: Int?, on database: any SQLDatabase) async throws -> [IssuedSignature] {
        try await database.select().column("*").from("issued_signatures").where(query)
            .orderBy("timestamp", .descending).orderBy("nonce").limit(limit)
            .all(decoding: IssuedSignature.self, keyDecodingStrategy: .convertFromSnakeCase)
    }

    func countIssuedSignatures(matching query: IssuedSignatureQuery) async throws -> Int {
        try await backend.reading { database in
            try await database.select().column(SQLFunction("COUNT", args: SQLLiteral.all), as: "n").from("issued_signatures").where(query)
                .first(decodingColumn: "n", as: Int.self) ?? 0
        }
    }
}
