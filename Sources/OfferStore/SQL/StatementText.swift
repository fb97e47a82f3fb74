import SQLKit

/// A statement's text written once for both ways the store runs it: through SQLKit, its values bound in each
/// database's placeholders (``bound(_:)``), and as a PostgreSQL prepared statement, whose text names them `$1`, `$2`,
/// … (``numbered``). `parts` is the text around the values, in order: one more part than values.
struct StatementText: Sendable {
    let parts: [String]

    init(_ parts: String...) {
        self.parts = parts
    }

    /// The text with `$1`, `$2`, … for the values.
    var numbered: String {
        filled(parts.indices.dropFirst().map { "$\($0)" })
    }

    /// The text with `expressions` (column names, parameters) for the values, in order.
    func filled(_ expressions: [String]) -> String {
        zip(expressions, parts.dropFirst()).reduce(parts.first ?? "") { text, pair in text + pair.0 + pair.1 }
    }

    /// Writes the statement to `serializer` with `values` bound in order (a part of a larger statement).
    func write(_ values: [any Encodable & Sendable], to serializer: inout SQLSerializer) {
        serializer.write(parts.first ?? "")
        for (value, part) in zip(values, parts.dropFirst()) {
            serializer.write(bind: value)
            serializer.write(part)
        }
    }

    /// The statement with `values` bound in order, one between each two parts.
    func bound(_ values: [any Encodable & Sendable]) -> SQLQueryString {
        var statement = SQLQueryString(parts.first ?? "")
        for (value, part) in zip(values, parts.dropFirst()) {
            statement.appendInterpolation(bind: value)
            statement.appendLiteral(part)
        }
        return statement
    }
}

extension SQLOfferStore {
    /// The customers holding an original transaction (bound: the original transaction), in the order of their keys.
    static let customersOfTransaction = StatementText(
        "SELECT bundle_identifier, application_username FROM customer_transactions WHERE original_transaction_id = ",
        " ORDER BY bundle_identifier, application_username"
    )

    /// A customer's facts and the answer stored under a key, in one row, each `NULL` when there is none (bound: the
    /// customer's app and name, the key).
    static let factsAndAnswer = StatementText(
        "SELECT (SELECT facts FROM customers WHERE bundle_identifier = ",
        " AND application_username = ",
        ") AS facts, (SELECT answer FROM stored_answers WHERE answer_key = ",
        ") AS answer"
    )
}
