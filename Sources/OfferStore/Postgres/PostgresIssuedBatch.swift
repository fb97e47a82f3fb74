import Logging
import NIOCore
import OfferModel
import PostgresNIO

/// PostgreSQL's group-commit batch: one statement whose text never changes — each column of the batch bound as one
/// array and read back with `unnest` — so that postgres-nio prepares it once per connection and the server parses,
/// analyses and plans it once (a generic plan), instead of a fresh multi-row `INSERT` with ten parameters a record
/// each time. The statement is its own transaction (`synchronous_commit = on`: durable when it returns) and adds the
/// records it inserts to `issued_daily`.
///
/// The batch is inserted as it is first, with its `issued_daily` increments counted here; should the unique index on
/// (timestamp, nonce) refuse it (the statement writes nothing), it is inserted again skipping the records written
/// before, counted by the statement, and a record not returned fails alone.
enum PostgresIssuedBatch {
    /// Inserts `records` on `connection`; returns those inserted, each once (any other was recorded before).
    static func insert(_ records: [IssuedSignature], connection: PostgresConnection) async throws -> Set<SQLOfferStore.RecordIdentity> {
        do {
            for try await _ in try await connection.execute(Insert(bindings: bindings(records, countingDaily: true)), logger: statementLogger) {}
            return Set(records.map(SQLOfferStore.RecordIdentity.init))
        } catch let error as PSQLError where error.isUniqueViolation {
            var inserted = Set<SQLOfferStore.RecordIdentity>()
            for try await (timestamp, nonce) in try await connection.execute(
                InsertSkippingDuplicates(bindings: bindings(records, countingDaily: false)),
                logger: statementLogger
            ) {
                inserted.insert(SQLOfferStore.RecordIdentity(timestamp: timestamp, nonce: nonce))
            }
            return inserted
        }
    }

    /// Runs the batch's statement with an empty batch on `connection` (it writes nothing), so that the connection
    /// has it prepared before the first batch (``PostgresBackend/warmUp()``).
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.execute(Insert(bindings: bindings([], countingDaily: true)), logger: logger)
    }

    /// The statements' logger: none (postgres-nio logs each statement at debug level; the store logs a failed batch).
    private static let statementLogger = Logger(label: "offer-signer.postgres.batch", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The batch as ten arrays in the order of ``IssuedSignatureInsert/columns``; with `countingDaily`, then its
    /// `issued_daily` increments (``IssuedRollup/dailyCounts(of:)``) as six arrays, in the order of the table's key.
    private static func bindings(_ records: [IssuedSignature], countingDaily: Bool) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: countingDaily ? 16 : 10)
        appendColumns(of: records, to: &bindings)
        guard countingDaily else { return bindings }
        let counts = IssuedRollup.dailyCounts(of: records).sorted { a, b in
            (a.key.day, a.key.bundleIdentifier, a.key.productIdentifier, a.key.offerIdentifier, a.key.channel)
                < (b.key.day, b.key.bundleIdentifier, b.key.productIdentifier, b.key.offerIdentifier, b.key.channel)
        }
        bindings.append(counts.map(\.key.day))
        bindings.append(counts.map(\.key.bundleIdentifier))
        bindings.append(counts.map(\.key.productIdentifier))
        bindings.append(counts.map(\.key.offerIdentifier))
        bindings.append(counts.map(\.key.channel))
        bindings.append(counts.map(\.value))
        return bindings
    }

    /// Appends `records` as ten arrays, in the order of ``IssuedSignatureInsert/columns`` (their types: ``types``).
    static func appendColumns(of records: [IssuedSignature], to bindings: inout PostgresBindings) {
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

    /// The insert of the batch's ten arrays, up to its conflict clause.
    private static let insertText = """
        INSERT INTO issued_signatures (\(IssuedSignatureInsert.columns)) \
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int8[], \
        $8::text[], $9::text[], $10::text[])
        """

    /// The parameters' types, in the order of ``IssuedSignatureInsert/columns``.
    static let types: [PostgresDataType] = [
        .textArray, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .textArray, .textArray, .textArray,
    ]

    /// The batch as it is, and its `issued_daily` increments counted here (every record is inserted, or the
    /// statement fails); no rows.
    struct Insert: PostgresPreparedStatement {
        static let name = "offer_signer_issued_batch"
        static let sql = """
            WITH counted AS (\(IssuedRollup.insertText) \
            SELECT * FROM unnest($11::int8[], $12::text[], $13::text[], $14::text[], $15::text[], $16::int8[]) \
            \(IssuedRollup.addOnConflict)) \
            \(insertText)
            """
        static var bindingDataTypes: [PostgresDataType] { types + [.int8Array, .textArray, .textArray, .textArray, .textArray, .int8Array] }
        var bindings: PostgresBindings
        func makeBindings() -> PostgresBindings { bindings }
        func decodeRow(_ row: PostgresRow) throws {}
    }

    /// The batch skipping the records written before, counting those inserted into `issued_daily` in the statement;
    /// the (timestamp, nonce) of each record inserted.
    struct InsertSkippingDuplicates: PostgresPreparedStatement {
        static let name = "offer_signer_issued_batch_skipping"
        static let sql = "WITH inserted AS (" + insertText + " ON CONFLICT (timestamp, nonce) DO NOTHING" + IssuedSignatureInsert.countingDailyTail
        static var bindingDataTypes: [PostgresDataType] { types }
        var bindings: PostgresBindings
        func makeBindings() -> PostgresBindings { bindings }
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
        buffer.writeNullableArray(elements, of: .text) { element, buffer in
            buffer.writeInteger(Int32(element.utf8.count))
            buffer.writeString(element)
        }
    }
}

extension ByteBuffer {
    /// A one-dimensional array whose elements may be `NULL`, in PostgreSQL's binary array format: the header (one
    /// dimension, or none when empty; whether any element is `NULL`; the elements' type; the length and lower bound),
    /// then each element, `write` giving its length and bytes, a `NULL` its length -1.
    mutating func writeNullableArray<Element>(
        _ elements: [Element?],
        of elementType: PostgresDataType,
        _ write: (Element, inout ByteBuffer) -> Void
    ) {
        writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)  // dimensions
        writeInteger(elements.contains(where: { $0 == nil }) ? 1 : 0, as: Int32.self)  // has NULLs
        writeInteger(elementType.rawValue)
        guard !elements.isEmpty else { return }
        writeInteger(Int32(elements.count))  // the dimension's length
        writeInteger(1, as: Int32.self)  // its lower bound
        for element in elements {
            if let element {
                write(element, &self)
            } else {
                writeInteger(-1, as: Int32.self)
            }
        }
    }
}
