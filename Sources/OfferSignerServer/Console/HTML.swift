import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// HTML that is safe to send: written as a string literal whose interpolated values are escaped, except other
/// ``HTML`` values (already safe) and lists of them.
///
/// ## Usage
///
/// ```swift
/// let row: HTML = "<td>\(customerName)</td>"   // `<` in the name becomes `&lt;`
/// let table: HTML = "<table>\(rows)</table>"    // rows: [HTML], inserted as they are
/// ```
struct HTML: Sendable, ExpressibleByStringInterpolation {
    /// The markup.
    private(set) var text: String

    init(stringLiteral value: String) { text = value }

    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }

    /// Nothing.
    static let empty: HTML = ""

    /// `value` with `&`, `<`, `>`, `"` and `'` replaced by their character references: safe in text and in
    /// quoted attribute values.
    static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate(set) var text = ""

        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + 16 * interpolationCount) }

        mutating func appendLiteral(_ literal: String) { text += literal }

        /// Any value: escaped.
        mutating func appendInterpolation(_ value: some CustomStringConvertible) { text += HTML.escape(value.description) }

        /// Markup: as it is.
        mutating func appendInterpolation(_ html: HTML) { text += html.text }

        /// Pieces of markup, one after the other.
        mutating func appendInterpolation(_ pieces: [HTML]) { for piece in pieces { text += piece.text } }
    }
}

extension HTML {
    /// A `text/html` response with this page.
    func response(status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}

/// The fields of an `application/x-www-form-urlencoded` body or a query, each bounded.
struct ConsoleForm: Sendable {
    private var fields: [String: String] = [:]

    /// The longest body read.
    static let maximumBodySize = 16 * 1024
    /// The longest value kept; a longer one is refused.
    static let maximumValueLength = 2048
    /// The longest candidate policy the policy form takes (a policy file is a few kilobytes).
    static let maximumPolicyLength = 256 * 1024
    /// The path of the one form with a long field, the policy's.
    static let policyPath = "/console/policy"

    /// The limits of a form posted to `path`: the body read and the longest value kept.
    static func limits(forPath path: String) -> (body: Int, value: Int) {
        path == policyPath ? (3 * maximumPolicyLength + 4096, maximumPolicyLength) : (maximumBodySize, maximumValueLength)
    }

    /// Parses `name=value&…`; `+` is a space, `%XX` a byte of UTF-8. A field longer than `maximumValueLength`, or
    /// not valid percent-encoding, is 400.
    init(encoded: String, maximumValueLength: Int = Self.maximumValueLength) throws(APIError) {
        for pair in encoded.split(separator: "&", omittingEmptySubsequences: true).prefix(64) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) throws(APIError) -> String {
                guard part.utf8.count <= 3 * maximumValueLength,
                    let value = part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                    value.utf8.count <= maximumValueLength
                else {
                    throw APIError(.invalidRequest, "A form field is too long or not valid form encoding.")
                }
                return value
            }
            let name = try decode(parts[0])
            fields[name] = parts.count > 1 ? try decode(parts[1]) : ""
        }
    }

    /// The form of a request's body, URL-encoded or `multipart/form-data` (a file upload), read within the limits
    /// of its path (``limits(forPath:)``).
    static func body(of request: inout Request) async throws -> ConsoleForm {
        let limits = limits(forPath: request.uri.path)
        let buffer = try await request.collectBody(upTo: limits.body)
        let contentType = request.headers[.contentType] ?? ""
        guard contentType.lowercased().hasPrefix("multipart/form-data") else {
            return try ConsoleForm(encoded: String(buffer: buffer), maximumValueLength: limits.value)
        }
        guard let match = contentType.firstMatch(of: /(?i);\s*boundary="?([0-9A-Za-z'()+_,.\/:=?-]{1,70})"?/) else {
            throw APIError(.invalidRequest, "A multipart form needs a boundary.")
        }
        return try ConsoleForm(multipart: buffer, boundary: String(match.1), maximumValueLength: limits.value)
    }

    /// Reads a `multipart/form-data` body (RFC 7578) in one pass (``MultipartFormData``): each part's `name` and its
    /// content (a file's as text). A file input left empty is left out. A body that is not multipart, has more than
    /// ``MultipartFormData/maximumParts`` parts or a part whose headers or content are too long, or is not UTF-8, is 400.
    init(multipart body: ByteBuffer, boundary: String, maximumValueLength: Int = Self.maximumValueLength) throws(APIError) {
        let parts: [MultipartFormData.Part]
        do throws(MultipartFormData.Problem) {
            parts = try MultipartFormData.parse(body, boundary: boundary, maximumContentLength: maximumValueLength)
        } catch {
            throw APIError(.invalidRequest, Self.message(error, maximumValueLength: maximumValueLength))
        }
        for part in parts {
            if part.content.isEmpty, part.filename != nil { continue }
            fields[part.name] = part.content
        }
    }

    /// What a client is told of a multipart body refused.
    static func message(_ problem: MultipartFormData.Problem, maximumValueLength: Int) -> String {
        switch problem {
        case .noBoundary, .malformed, .missingClosingDelimiter, .noName:
            """
            The form is not valid multipart/form-data (RFC 7578): a boundary line, a part's headers or the closing boundary line is missing or \
            broken; send the form again from the console's page.
            """
        case .tooManyParts:
            "The form has more than \(MultipartFormData.maximumParts) parts; send only the fields of the console's form."
        case .headerBlockTooLarge:
            """
            A part of the form has more than \(MultipartFormData.maximumHeaderBlock / 1024) KiB or \(MultipartFormData.maximumHeaderLines) \
            lines of headers; send the form again from the console's page.
            """
        case .contentTooLong:
            "A field or file of the form is longer than \(maximumValueLength) bytes; shorten it."
        case .notUTF8:
            "A field or file of the form is not UTF-8 text; save the file as UTF-8 and send it again."
        }
    }

    /// The value of `name`, or `nil`.
    subscript(name: String) -> String? { fields[name] }
}
