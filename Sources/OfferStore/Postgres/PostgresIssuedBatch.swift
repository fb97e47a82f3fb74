import Foundation
import NIOCore
import OfferModel
import PostgresNIO

/// PostgreSQL's group-commit batch: one statement whose text never changes — each column of the batch bound as one
/// array and read back with `unnest` — so that postgres-nio prepares it once per connection and the server parses,
/// analyses and plans it once (a generic plan), instead of a fresh multi-row `INSERT` with ten parameters a record
/// each time. The statement is its own transaction (`synchronous_commit = on`: durable when it returns) and counts
/// the records it inserts into `issued_daily` (``IssuedSignatureInsert/countingDailyTail``).
///
/// The batch is inserted as it is first; should the unique index on (timestamp, nonce) refuse it (the statement
/// writes nothing), it is inserted again skipping the records written before, and a record not returned fails alone.
enum PostgresIssuedBatch {
    /// Inserts `records`; returns those inserted, each once (any other was recorded before).
    static func insert(_ records: [IssuedSignature], client: PostgresClient) async throws -> Set<SQLOfferStore.RecordIdentity> {
        let columns = Columns(records)
        do {
            var count: Int64 = -1
            for try await written in try await client.execute(Insert(columns: columns)) { count = written }
            guard count == Int64(records.count) else {
                throw OfferStoreError(code: .unavailable, message: "PostgreSQL store: a batch of \(records.count) signatures wrote \(count).")
            }
            return Set(records.map(SQLOfferStore.RecordIdentity.init))
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
            var inserted = Set<SQLOfferStore.RecordIdentity>()
            for try await (timestamp, nonce) in try await client.execute(InsertSkippingDuplicates(columns: columns)) {
                inserted.insert(SQLOfferStore.RecordIdentity(timestamp: timestamp, nonce: nonce))
            }
            return inserted
        }
    }

    /// The statement's text up to its conflict clause: the columns of ``IssuedSignatureInsert/columns``, from
    /// the ten arrays in that order.
    private static let head = """
        WITH inserted AS (INSERT INTO issued_signatures (\(IssuedSignatureInsert.columns)) \
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[], \
        $8::text[], $9::text[], $10::text[])
        """

    /// The parameters' types, in the order of ``IssuedSignatureInsert/columns``.
    private static let types: [PostgresDataType] = [
        .textArray, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .textArray, .textArray, .textArray,
    ]

    /// A batch, column by column.
    struct Columns: Sendable {
        var bindings = PostgresBindings(capacity: 10)

        init(_ records: [IssuedSignature]) {
            bindings.append(records.map(\.nonce))
            bindings.append(records.map(\.keyIdentifier))
            bindings.append(records.map(\.bundleIdentifier))
            bindings.append(records.map(\.productIdentifier))
            bindings.append(records.map(\.offerIdentifier))
            bindings.append(records.map(\.applicationUsername))
            bindings.append(records.map(\.timestamp))
            bindings.append(records.map(\.format))
            bindings.append(records.map(\.channel))
            bindings.append(NullableTextArray(records.map(\.requestIdentifier)))
        }
    }

    /// The batch as it is; one row, the number of records inserted (all of them, or the statement fails).
    struct Insert: PostgresPreparedStatement {
        static let name = "offer_signer_issued_batch"
        static let sql = head + IssuedSignatureInsert.countingDailyTail.replacingOccurrences(
            of: "SELECT timestamp, nonce FROM inserted", with: "SELECT COUNT(*) FROM inserted")
        static var bindingDataTypes: [PostgresDataType] { types }
        var columns: Columns
        func makeBindings() -> PostgresBindings { columns.bindings }
        func decodeRow(_ row: PostgresRow) throws -> Int64 { try row.decode(Int64.self) }
    }

    /// The batch skipping the records written before; the (timestamp, nonce) of each record inserted.
    struct InsertSkippingDuplicates: PostgresPreparedStatement {
        static let name = "offer_signer_issued_batch_skipping"
        static let sql = head + " ON CONFLICT (timestamp, nonce) DO NOTHING" + IssuedSignatureInsert.countingDailyTail
        static var bindingDataTypes: [PostgresDataType] { types }
        var columns: Columns
        func makeBindings() -> PostgresBindings { columns.bindings }
        func decodeRow(_ row: PostgresRow) throws -> (Int64, String) { try row.decode((Int64, String).self) }
    }
}

/// A `text[]` whose elements may be NULL (postgres-nio encodes arrays of non-optional elements only), in
/// PostgreSQL's binary array format.
struct NullableTextArray: PostgresNonThrowingEncodable {
    var elements: [String?]
    init(_ elements: [String?]) { self.elements = elements }

    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)  // dimensions
        buffer.writeInteger(elements.contains(nil) ? 1 : 0, as: Int32.self)  // has NULLs
        buffer.writeInteger(PostgresDataType.text.rawValue)
        guard !elements.isEmpty else { return }
        buffer.writeInteger(Int32(elements.count))  // the dimension's length
        buffer.writeInteger(1, as: Int32.self)  // its lower bound
        for element in elements {
            if let element {
                buffer.writeInteger(Int32(element.utf8.count))
                buffer.writeString(element)
            } else {
                buffer.writeInteger(-1, as: Int32.self)
            }
        }
    }
}
