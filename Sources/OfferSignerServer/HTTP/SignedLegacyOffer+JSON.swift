import Foundation
import Hummingbird
import NIOCore
import OfferSigning
import OfferApplication

extension SignedLegacyOffer: ResponseGenerator {
    /// The answer of `POST /v1/offers/sign` (legacy), for both front ends: ``apiJSON`` with the router's JSON
    /// content type. (It does not follow the request context's `responseEncoder`: should that change, change this.)
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: apiJSON))
    }

    /// The bundle as `JSONEncoder.api` writes it — keys sorted, slashes unescaped, the same escapes — written out
    /// field by field: the encoder costs ~7 µs a signature (3 % of the server's CPU in a profile), this a few
    /// hundred nanoseconds. `APIEncoderTests` compare the two on hostile strings.
    var apiJSON: ByteBuffer {
        // Keys in sorted order, as `.sortedKeys` writes them.
        let fields: [(key: StaticString, value: String)] = [
            ("{\"applicationUsername\":", applicationUsername), (",\"bundleIdentifier\":", bundleIdentifier),
            (",\"format\":", format), (",\"keyIdentifier\":", keyIdentifier), (",\"nonce\":", nonce),
            (",\"offerIdentifier\":", offerIdentifier), (",\"productIdentifier\":", productIdentifier),
            (",\"signature\":", signature),
        ]
        var buffer = ByteBuffer()
        buffer.reserveCapacity(fields.reduce(200) { $0 + $1.value.utf8.count })  // keys, quotes, digits: ~182
        for (key, value) in fields {
            buffer.writeStaticString(key)
            Self.writeString(value, to: &buffer)
        }
        buffer.writeStaticString(",\"timestamp\":")
        buffer.writeString(String(timestamp))
        buffer.writeStaticString("}")
        return buffer
    }

    /// A JSON string literal as Foundation's JSONEncoder writes one with `.withoutEscapingSlashes`: `"` and `\`
    /// escaped, `\b \f \n \r \t` short, other control characters `\u00xx`, everything else as UTF-8.
    static func writeString(_ string: String, to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "\""))
        var utf8 = string
        utf8.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start..<index]))
                switch byte {
                case UInt8(ascii: "\""): buffer.writeStaticString("\\\"")
                case UInt8(ascii: "\\"): buffer.writeStaticString("\\\\")
                case 0x08: buffer.writeStaticString("\\b")
                case 0x0C: buffer.writeStaticString("\\f")
                case 0x0A: buffer.writeStaticString("\\n")
                case 0x0D: buffer.writeStaticString("\\r")
                case 0x09: buffer.writeStaticString("\\t")
                default:
                    let digits: StaticString = "0123456789abcdef"
                    buffer.writeStaticString("\\u00")
                    buffer.writeInteger(digits.utf8Start[Int(byte >> 4)])
                    buffer.writeInteger(digits.utf8Start[Int(byte & 0xF)])
                }
                start = index + 1
            }
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[start...]))
        }
        buffer.writeInteger(UInt8(ascii: "\""))
    }
}
