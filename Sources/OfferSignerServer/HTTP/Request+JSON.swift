import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads the body (up to the context's limit) and decodes it as JSON, mapping every failure to the
    /// API's error shape: 415 `unsupported_media_type` unless the body is declared `application/json` (so a
    /// browser's "simple" cross-origin form POST is never acted on), 413 `payload_too_large`, 400
    /// `malformed_json`, 400 `duplicate_key` for an object that names a key twice, 400 `invalid_request` with
    /// the field.
    func decodeJSON<Value: Decodable>(as type: Value.Type, context: some RequestContext) async throws -> Value {
        guard Self.isJSON(headers[.contentType]) else {
            throw APIError.unsupportedMediaType
        }
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: context.maxUploadSize)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: context.maxUploadSize)
        }
        if let key = JSONDuplicateKeys.firstDuplicate(in: buffer.readableBytesView) {
            throw APIError(
                status: .badRequest, code: "duplicate_key", message: "The key \(key.prefix(64)) appears twice in one JSON object; send each key once.",
                field: String(key.prefix(64)))
        }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError(error)
        }
    }

    /// Whether a Content-Type names JSON: `application/json`, with or without parameters, in any case.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        return mediaType == "application/json"
    }
}
