import NIOCore

/// A `multipart/form-data` body (RFC 7578, framed as RFC 2046 §5.1 says), read in one pass over its bytes.
///
/// Each delimiter (`CRLF--boundary`) is found by a Knuth–Morris–Pratt search that continues where the previous one
/// stopped, so the whole body costs time linear in its length whatever its bytes are; no remainder of the body is
/// sliced, copied or converted to a string. A part's header block is bounded (``maximumHeaderBlock`` bytes,
/// ``maximumHeaderLines`` lines), and so is the number of parts (``maximumParts``).
///
/// ## Usage
///
/// ```swift
/// let parts = try MultipartFormData.parse(buffer, boundary: "----WebKitFormBoundaryX", maximumContentLength: 2048)
/// for part in parts { print(part.name, part.filename ?? "-", part.content) }
/// ```
///
/// The preamble before the first delimiter and the epilogue after the closing one are ignored; a body that ends
/// before its closing delimiter is refused.
enum MultipartFormData {
    /// One part: the field's name, the file's name for a file input, and the content as text.
    struct Part: Sendable, Equatable {
        var name: String
        var filename: String?
        var content: String
    }

    /// Why a body is refused.
    enum Problem: Error, Sendable, Equatable {
        /// No delimiter line with the boundary anywhere in the body.
        case noBoundary
        /// A delimiter line, a header line or `Content-Disposition` that is not as RFC 7578 says.
        case malformed
        /// The body ends inside a part: the closing delimiter (`--boundary--`) never comes.
        case missingClosingDelimiter
        /// More than ``maximumParts`` parts.
        case tooManyParts
        /// A part's header block longer than ``maximumHeaderBlock`` bytes or ``maximumHeaderLines`` lines.
        case headerBlockTooLarge
        /// A part without `Content-Disposition: form-data; name="…"`.
        case noName
        /// A part's content longer than the caller's limit.
        case contentTooLong
        /// A name or a content that is not UTF-8.
        case notUTF8
    }

    /// The most parts a body may have (the console's forms have a handful).
    static let maximumParts = 64
    /// The longest header block of one part, in bytes (its blank line excluded).
    static let maximumHeaderBlock = 8 * 1024
    /// The most header lines of one part (a browser sends one or two).
    static let maximumHeaderLines = 8

    /// Parses `body`.
    /// - Parameters:
    ///   - body: the request's body.
    ///   - boundary: the `boundary` parameter of its `Content-Type` (1 to 70 characters).
    ///   - maximumContentLength: the longest content of one part, in bytes.
    /// - Returns: the parts, in order.
    /// - Throws: ``Problem``.
    static func parse(_ body: ByteBuffer, boundary: String, maximumContentLength: Int) throws(Problem) -> [Part] {
        let result: Result<[Part], Problem> = body.withUnsafeReadableBytes { bytes in
            do throws(Problem) {
                return .success(try parse(bytes: bytes, boundary: boundary, maximumContentLength: maximumContentLength))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
    private static let dash: UInt8 = 0x2D

    static func parse(bytes: UnsafeRawBufferPointer, boundary: String, maximumContentLength: Int) throws(Problem) -> [Part] {
        let dashBoundary = Array("--\(boundary)".utf8)
        let delimiter = BytePattern([cr, lf] + dashBoundary)
        var position: Int
        // The first delimiter may open the body without the CRLF that precedes every other one.
        if bytes.count >= dashBoundary.count, dashBoundary.indices.allSatisfy({ bytes[$0] == dashBoundary[$0] }) {
            position = dashBoundary.count
        } else if let first = delimiter.firstIndex(in: bytes, from: 0) {
            position = first + delimiter.count
        } else {
            throw .noBoundary
        }
        var parts: [Part] = []
        while true {
            // Just after `--boundary`: `--` closes the body (the epilogue is ignored); otherwise optional spaces or
            // tabs (transport padding), then CRLF, then a part.
            if position + 1 < bytes.count, bytes[position] == dash, bytes[position + 1] == dash { return parts }
            while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 { position += 1 }
            guard position + 1 < bytes.count else { throw .missingClosingDelimiter }
            guard bytes[position] == cr, bytes[position + 1] == lf else { throw .malformed }
            position += 2
            guard parts.count < maximumParts else { throw .tooManyParts }
            guard let end = delimiter.firstIndex(in: bytes, from: position) else { throw .missingClosingDelimiter }
            parts.append(try part(bytes, position..<end, maximumContentLength: maximumContentLength))
            position = end + delimiter.count
        }
    }

    /// One part: its header lines (`Content-Disposition` read, the others ignored) and its content.
    private static func part(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, maximumContentLength: Int) throws(Problem) -> Part {
        // The header block ends at the first blank line; a part may also end right after its header lines
        // (RFC 2046: the body of a part is optional).
        let headerEnd: Int
        let contentStart: Int
        if range.count >= 2, bytes[range.lowerBound] == cr, bytes[range.lowerBound + 1] == lf {
            (headerEnd, contentStart) = (range.lowerBound, range.lowerBound + 2)  // no headers at all
        } else {
            let searchEnd = min(range.upperBound, range.lowerBound + maximumHeaderBlock + 4)
            var index = range.lowerBound
            var found: Int?
            while index + 3 < searchEnd {
                if bytes[index] == cr, bytes[index + 1] == lf, bytes[index + 2] == cr, bytes[index + 3] == lf {
                    found = index
                    break
                }
                index += 1
            }
            if let found {
                (headerEnd, contentStart) = (found, found + 4)
            } else if range.count >= 2, range.count - 2 <= maximumHeaderBlock, bytes[range.upperBound - 2] == cr, bytes[range.upperBound - 1] == lf {
                (headerEnd, contentStart) = (range.upperBound - 2, range.upperBound)  // header lines, no body
            } else {
                throw range.count > maximumHeaderBlock ? .headerBlockTooLarge : .malformed
            }
        }
        guard headerEnd - range.lowerBound <= maximumHeaderBlock else { throw .headerBlockTooLarge }
        var disposition: (name: String, filename: String?)?
        var lineStart = range.lowerBound
        var lines = 0
        while lineStart < headerEnd {
            var lineEnd = lineStart
            while lineEnd < headerEnd, !(bytes[lineEnd] == cr && lineEnd + 1 < headerEnd && bytes[lineEnd + 1] == lf) {
                // A header line holds no control character but a tab (a lone CR or LF included).
                guard bytes[lineEnd] >= 0x20 || bytes[lineEnd] == 0x09, bytes[lineEnd] != 0x7F else { throw .malformed }
                lineEnd += 1
            }
            lines += 1
            guard lines <= maximumHeaderLines else { throw .headerBlockTooLarge }
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd])
            guard let colon = line.firstIndex(of: 0x3A), colon > 0, line[0] != 0x20, line[0] != 0x09 else { throw .malformed }
            if asciiLowercased(UnsafeRawBufferPointer(rebasing: line[..<colon])) == "content-disposition" {
                guard disposition == nil else { throw .malformed }
                guard let value = String(validating: UnsafeRawBufferPointer(rebasing: line[(colon + 1)...]), as: UTF8.self) else { throw .notUTF8 }
                disposition = try contentDisposition(value)
            }
            lineStart = lineEnd + 2
        }
        guard let disposition else { throw .noName }
        let content = UnsafeRawBufferPointer(rebasing: bytes[contentStart..<range.upperBound])
        guard content.count <= maximumContentLength else { throw .contentTooLong }
        guard let text = String(validating: content, as: UTF8.self) else { throw .notUTF8 }
        return Part(name: disposition.name, filename: disposition.filename, content: text)
    }

    /// `form-data; name="…"; filename="…"`: the name (required) and the file's name. Values are quoted strings
    /// (a browser percent-encodes `"`, CR and LF in them) or tokens; other parameters are ignored.
    static func contentDisposition(_ value: String) throws(Problem) -> (name: String, filename: String?) {
        var rest = Substring(value)
        func skipSpaces() { rest = rest.drop { $0 == " " || $0 == "\t" } }
        skipSpaces()
        let type = rest.prefix { $0 != ";" && $0 != " " && $0 != "\t" }
        guard type.lowercased() == "form-data" else { throw .malformed }
        rest = rest.dropFirst(type.count)
        var name: String?
        var filename: String?
        while true {
            skipSpaces()
            guard let separator = rest.first else { break }
            guard separator == ";" else { throw .malformed }
            rest = rest.dropFirst()
            skipSpaces()
            if rest.isEmpty { break }  // a trailing `;`
            let parameter = rest.prefix { $0 != "=" && $0 != ";" && $0 != " " && $0 != "\t" }
            guard !parameter.isEmpty else { throw .malformed }
            rest = rest.dropFirst(parameter.count)
            skipSpaces()
            guard rest.first == "=" else { throw .malformed }
            rest = rest.dropFirst()
            skipSpaces()
            let parameterValue: Substring
            if rest.first == "\"" {
                rest = rest.dropFirst()
                guard let close = rest.firstIndex(of: "\"") else { throw .malformed }
                parameterValue = rest[..<close]
                rest = rest[rest.index(after: close)...]
            } else {
                parameterValue = rest.prefix { $0 != ";" && $0 != " " && $0 != "\t" }
                rest = rest.dropFirst(parameterValue.count)
            }
            switch parameter.lowercased() {
            case "name":
                guard name == nil else { throw .malformed }
                name = String(parameterValue)
            case "filename":
                guard filename == nil else { throw .malformed }
                filename = String(parameterValue)
            default:
                break
            }
        }
        guard let name else { throw .noName }
        return (name, filename)
    }

    private static func asciiLowercased(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes.lazy.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

/// A byte string found in a buffer by Knuth–Morris–Pratt: every byte is looked at once, whatever the buffer holds.
struct BytePattern: Sendable {
    private let bytes: [UInt8]
    /// For each prefix length, the length of its longest proper prefix that is also its suffix.
    private let fallback: [Int]

    init(_ bytes: [UInt8]) {
        precondition(!bytes.isEmpty)
        self.bytes = bytes
        var fallback = [Int](repeating: 0, count: bytes.count)
        var length = 0
        for index in 1..<bytes.count {
            while length > 0, bytes[index] != bytes[length] { length = fallback[length - 1] }
            if bytes[index] == bytes[length] { length += 1 }
            fallback[index] = length
        }
        self.fallback = fallback
    }

    /// The pattern's length.
    var count: Int { bytes.count }

    /// Where the pattern first occurs in `buffer` at or after `start`, or `nil`.
    func firstIndex(in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let first = bytes[0]
        var matched = 0
        var index = start
        while index < buffer.count {
            let byte = buffer[index]
            if matched == 0 {
                if byte != first {
                    index += 1
                    continue
                }
            } else {
                while matched > 0, byte != bytes[matched] { matched = fallback[matched - 1] }
            }
            if byte == bytes[matched] { matched += 1 }
            index += 1
            if matched == bytes.count { return index - matched }
        }
        return nil
    }
}
