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
                    throw APIError(status: .badRequest, code: "invalid_request", message: "A form field is too long or not valid form encoding.")
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
            throw APIError(status: .badRequest, code: "invalid_request", message: "A multipart form needs a boundary.")
        }
        return try ConsoleForm(multipart: String(decoding: buffer.readableBytesView, as: UTF8.self), boundary: String(match.1), maximumValueLength: limits.value)
    }

    /// Parses a `multipart/form-data` body (RFC 7578): each part's `name` and its content (a file's as text). A file
    /// input left empty is left out. A part that is too long, or a body that is not multipart, is 400.
    init(multipart body: String, boundary: String, maximumValueLength: Int = Self.maximumValueLength) throws(APIError) {
        let invalid = APIError(status: .badRequest, code: "invalid_request", message: "The form is not valid multipart/form-data, or a field is too long.")
        let parts = body.components(separatedBy: "--" + boundary).dropFirst()  // the preamble
        guard !parts.isEmpty else { throw invalid }
        for part in parts.prefix(64) {
            if part.hasPrefix("--") { break }  // the closing delimiter
            guard let blank = part.range(of: "\r\n\r\n") else { throw invalid }
            let headers = part[..<blank.lowerBound]
            var content = part[blank.upperBound...]
            if content.hasSuffix("\r\n") { content = content.dropLast() }  // "\r\n" is one Character
            guard let name = headers.firstMatch(of: /(?i)content-disposition:[^\r\n]*;\s*name="([^"\r\n]*)"/)?.1,
                  content.utf8.count <= maximumValueLength
            else { throw invalid }
            if content.isEmpty, headers.contains("filename=") { continue }
            fields[String(name)] = String(content)
        }
    }

    /// The value of `name`, or `nil`.
    subscript(name: String) -> String? { fields[name] }
}
