import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads the body (up to the context's limit) and decodes it as JSON, mapping every failure to the
    /// API's error shape: 415 `unsupported_media_type` unless the body is declared `application/json` (so a
    /// browser's "simple" cross-origin form POST is never acted on), 413 `payload_too_large`, 400
    /// `malformed_json`, 400 `duplicate_key` for an object that names a key twice, 400 `invalid_request` with
    /// the field.
    package func decodeJSON<Value: Decodable>(as type: Value.Type, context: some RequestContext) async throws -> Value {
        guard Self.isJSON(headers[.contentType]) else {
            throw APIError.unsupportedMediaType
        }
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: context.maxUploadSize)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: context.maxUploadSize)
        }
        return try Self.decodeJSON(as: type, from: buffer)
    }

    /// Decodes a whole body as JSON, with the API's errors: 400 `malformed_json` for anything RFC 8259 does not allow
    /// (``StrictJSON``: the one verdict both front ends give), `duplicate_key` for a key twice in one object at any
    /// depth, `invalid_request`
    /// with the field (the part of ``decodeJSON(as:context:)`` after the body is read; the event-loop signing path
    /// calls it too).
    static func decodeJSON<Value: Decodable>(as type: Value.Type, from buffer: ByteBuffer) throws -> Value {
        if let violation = buffer.withUnsafeReadableBytes({ StrictJSON.violation(in: $0) }) {
            throw APIError(violation)
        }
        let data = Data(buffer.readableBytesView)
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch let error as DecodingError {
            // Foundation reports a number it cannot read as the requested integer (1.5, 1e30) as "not valid
            // JSON" with no field; name the field when the body is valid JSON after all.
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty, let field = Self.firstNonInteger(in: data) {
                throw APIError.invalidRequest(field: field, "\(field) must be a whole number within range (no fraction or exponent beyond 64 bits).")
            }
            throw APIError(error)
        }
    }

    /// The first top-level field of a JSON object whose value is a number that is not an exact 64-bit
    /// integer, or `nil` (not an object, not JSON, or no such number).
    static func firstNonInteger(in data: Data) -> String? {
        guard let object = try? JSONDecoder().decode([String: NumberProbe].self, from: data) else { return nil }
        return object.filter(\.value.isNonInteger).keys.sorted().first
    }

    /// Whether a JSON value is a number that is not an exact 64-bit integer.
    private struct NumberProbe: Decodable {
        var isNonInteger = false

        init(from decoder: any Decoder) throws {
            guard let container = try? decoder.singleValueContainer() else { return }
            if (try? container.decode(Int64.self)) != nil { return }
            isNonInteger = (try? container.decode(Double.self)) != nil
        }
    }

    /// Whether a Content-Type names JSON: `application/json`, with or without parameters, in any case.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var contentType else { return false }
        let ascii: Bool? = contentType.withUTF8 { bytes in
            // ASCII (every real Content-Type): compared byte by byte over the string's memory, without Foundation's
            // trimming or lazy views (microseconds a request). The only ASCII white space of `.whitespaces` is space
            // and tab.
            for byte in bytes where byte >= 0x80 { return nil }
            let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            var start = 0
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            let expected: StaticString = "application/json"
            guard end - start == expected.utf8CodeUnitCount else { return false }
            for offset in 0..<(end - start) {
                let byte = bytes[start + offset]
                let lower = expected.utf8Start[offset]
                guard byte == lower || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) && byte | 0x20 == lower else { return false }
            }
            return true
        }
        if let ascii { return ascii }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return mediaType == "application/json"
    }
}
