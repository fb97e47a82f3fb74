import Foundation

/// A `DecodingError` in plain words: the path of the field and what is wrong with it, never a Swift type name nor
/// the decoder's own description (which names types and, for some errors, addresses in the binary).
///
/// The one translator of decoding errors: the HTTP API's `invalid_request` and `malformed_json` and the App Store
/// data's `malformed_payload` both start from it, so a field's path is written one way everywhere (`items[2].price`).
public struct DecodingProblem: Sendable, Equatable {
    /// What is wrong with the field.
    public enum Kind: Sendable, Equatable {
        /// The field is missing.
        case missing
        /// The field, or the document, is `null`.
        case null
        /// The field, or the document, is of another JSON kind than this one ("a string", "an integer", …).
        case wrongKind(expected: String)
        /// The field holds a value of the right kind that it does not accept (a value outside an enumeration, a
        /// string that is not a date, …).
        case notAccepted
        /// The document is not valid JSON.
        case notJSON
        /// The decoder failed in a way it does not describe.
        case unreadable
    }

    /// The field's path (`data.signedTransactionInfo`, `items[2].price`); empty for the document itself.
    public let field: String
    /// What is wrong.
    public let kind: Kind

    /// The problem `error` names.
    public init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            (field, kind) = (Self.path(context.codingPath + [key]), .missing)
        case .valueNotFound(_, let context):
            (field, kind) = (Self.path(context.codingPath), .null)
        case .typeMismatch(let type, let context):
            (field, kind) = (Self.path(context.codingPath), .wrongKind(expected: Self.describe(type)))
        case .dataCorrupted(let context):
            field = Self.path(context.codingPath)
            kind = field.isEmpty ? .notJSON : .notAccepted
        @unknown default:
            (field, kind) = ("", .unreadable)
        }
    }

    /// What is wrong, as a sentence: "price must be a number.", "productId is required.".
    public var message: String { message(reference: nil) }

    /// What is wrong, as a sentence; `reference` (`GET /openapi.yaml`) is where the reader finds the values a field
    /// accepts, named when the sentence cannot say them.
    public func message(reference: String?) -> String {
        switch kind {
        case .missing:
            return "\(field) is required."
        case .null:
            return field.isEmpty ? "The document must not be null." : "\(field) must not be null."
        case .wrongKind(let expected):
            let kind = expected == Self.otherKind ? reference.map { "\(expected) (see \($0))" } ?? expected : expected
            return field.isEmpty ? "The document must be \(kind)." : "\(field) must be \(kind)."
        case .notAccepted:
            return "\(field) has a value this field does not accept" + (reference.map { "; see \($0) for the allowed values." } ?? ".")
        case .notJSON:
            return "The document is not valid JSON."
        case .unreadable:
            return "The document could not be read."
        }
    }

    /// `error` in plain words: a `DecodingError` as ``init(_:)`` puts it, anything else as a document that could not be
    /// read (its own description is not repeated).
    public static func describe(_ error: any Error) -> String {
        (error as? DecodingError).map { DecodingProblem($0).message } ?? "The document could not be read."
    }

    /// A coding path as `a.b[2].c`: an array's index in brackets, a name after a dot.
    public static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue, key.stringValue == "Index \(index)" || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    private static let otherKind = "a value of another JSON type"

    /// The JSON kind a Swift type stands for.
    static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type: "an integer"
        case is Double.Type, is Float.Type, is Decimal.Type: "a number"
        case is [String: Any].Type, is [String: String].Type, is [String: String?].Type: "a JSON object"
        case is [Any].Type, is [String].Type: "a JSON array"
        default: otherKind
        }
    }
}
