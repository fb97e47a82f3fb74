import Foundation
import Hummingbird
import NIOCore

extension Request {
    /// Reads the body (up to the context's limit) and decodes it as JSON, mapping every failure to the
    /// API's error shape: 413 `payload_too_large`, 400 `malformed_json`, 400 `invalid_request` with the field.
    func decodeJSON<Value: Decodable>(as type: Value.Type, context: some RequestContext) async throws -> Value {
        let buffer: ByteBuffer
        do {
            buffer = try await body.collect(upTo: context.maxUploadSize)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: context.maxUploadSize)
        }
        do {
            return try JSONDecoder().decode(Value.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError(error)
        }
    }
}
