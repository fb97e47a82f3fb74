import Foundation

/// A `DecodingError` in plain words: the path of the field and what is wrong with it, never a Swift type name nor
/// the decoder's own description (which names types and, for some errors, addresses in the binary).
public struct DecodingProblem: Sendable, Equatable {
    /// The field's path (`data.signedTransactionInfo`, `items[2].price`); empty for the document itself.
    public let field: String
    /// What is wrong, as a sentence: "price must be a number.", "productId is required.".
    public let message: String

    /// The problem `error` names.
    public init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            field = Self.path(context.codingPath + [key])
            message = "\(field) is required."
        case .valueNotFound(_, let context):
            field = Self.path(context.codingPath)
            message = field.isEmpty ? "The document must not be null." : "\(field) must not be null."
        case .typeMismatch(let type, let context):
            field = Self.path(context.codingPath)
            message = field.isEmpty ? "The document must be \(Self.describe(type))." : "\(field) must be \(Self.describe(type))."
        case .dataCorrupted(let context):
            field = Self.path(context.codingPath)
            message = field.isEmpty ? "The document is not valid JSON." : "\(field) has a value this field does not accept."
        @unknown default:
            field = ""
            message = "The document could not be read."
        }
    }

    /// `error` in plain words: a `DecodingError` as ``init(_:)`` puts it, anything else as a document that could not be
    /// read (its own description is not repeated).
    public static func describe(_ error: any Error) -> String {
        (error as? DecodingError).map { DecodingProblem($0).message } ?? "The document could not be read."
    }

    /// A coding path as `a.b[2].c`.
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

    /// The JSON kind a Swift type stands for.
    public static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type: "an integer"
        case is Double.Type, is Float.Type, is Decimal.Type: "a number"
        case is [String: Any].Type, is [String: String].Type, is [String: String?].Type: "a JSON object"
        case is [Any].Type, is [String].Type: "a JSON array"
        default: "a value of another JSON type"
        }
    }
}
