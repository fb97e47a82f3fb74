import Foundation
import Hummingbird
import NIOCore
import OfferApplication
import OfferSigning

extension SignedLegacyOffer: ResponseGenerator {
    /// The answer of `POST /v1/offers/sign` (legacy), for both front ends: ``apiJSON`` with the router's JSON
    /// content type. (It does not follow the request context's `responseEncoder`: should that change, change this.)
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: apiJSON))
    }

    /// The bundle as `JSONEncoder.api` writes it, then a newline (as every answer ends) — keys sorted, slashes unescaped, the same escapes — written
    /// out field by field: the encoder costs ~7 µs a signature (3 % of the server's CPU in a profile), this a few hundred nanoseconds.
    /// `APIEncoderTests` compare the two on hostile strings.
    var apiJSON: ByteBuffer {
        // Keys in sorted order, as `.sortedKeys` writes them. Measured first, then written in one pass into the
        // buffer's memory: each ByteBuffer write costs a few hundred instructions, twenty of them ~5,000 a request.
        let digits = String(timestamp)
        let strings = (applicationUsername, bundleIdentifier, format, keyIdentifier, nonce, offerIdentifier, productIdentifier, signature)
        let length =
            Self.fixedLength + digits.utf8.count + Self.literalLength(strings.0) + Self.literalLength(strings.1)
            + Self.literalLength(strings.2) + Self.literalLength(strings.3) + Self.literalLength(strings.4)
            + Self.literalLength(strings.5) + Self.literalLength(strings.6) + Self.literalLength(strings.7)
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { memory in
            var out = RawWriter(memory: memory)
            out.raw("{\"applicationUsername\":")
            out.literal(strings.0)
            out.raw(",\"bundleIdentifier\":")
            out.literal(strings.1)
            out.raw(",\"format\":")
            out.literal(strings.2)
            out.raw(",\"keyIdentifier\":")
            out.literal(strings.3)
            out.raw(",\"nonce\":")
            out.literal(strings.4)
            out.raw(",\"offerIdentifier\":")
            out.literal(strings.5)
            out.raw(",\"productIdentifier\":")
            out.literal(strings.6)
            out.raw(",\"signature\":")
            out.literal(strings.7)
            out.raw(",\"timestamp\":")
            out.rawString(digits)
            out.raw("}\n")
            return out.count
        }
        return buffer
    }

    /// The bytes of the keys and punctuation ``apiJSON`` writes around its values.
    private static let fixedLength =
        """
        {\"applicationUsername\":,\"bundleIdentifier\":,\"format\":,\"keyIdentifier\":,\"nonce\":,\"offerIdentifier\":,\"productIdentifier\":,\
        \"signature\":,\"timestamp\":}\n
        """
        .utf8.count

    /// The length of `string` as a JSON string literal (``RawWriter/literal(_:)``), quotes included.
    private static func literalLength(_ string: String) -> Int {
        var string = string
        return string.withUTF8 { bytes in
            var length = bytes.count + 2
            for index in bytes.indices where bytes[index] < 0x20 || bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
                switch bytes[index] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, 0x0A, 0x0D, 0x09: length += 1
                default: length += 5
                }
            }
            return length
        }
    }

    /// Writes into memory ``apiJSON`` measured beforehand, runs of bytes with nothing to escape copied whole.
    private struct RawWriter {
        let memory: UnsafeMutableRawBufferPointer
        var count = 0

        mutating func raw(_ text: StaticString) {
            copy(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }

        mutating func rawString(_ text: String) {
            var text = text
            text.withUTF8 { copy($0) }
        }

        private mutating func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            (memory.baseAddress! + count).copyMemory(from: base, byteCount: bytes.count)
            count += bytes.count
        }

        private mutating func put(_ byte: UInt8) {
            memory[count] = byte
            count += 1
        }

        /// A JSON string literal as Foundation's JSONEncoder writes one with `.withoutEscapingSlashes`: `"` and `\`
        /// escaped, `\b \f \n \r \t` short, other control characters `\u00xx`, everything else as UTF-8.
        mutating func literal(_ string: String) {
            put(UInt8(ascii: "\""))
            var string = string
            string.withUTF8 { bytes in
                var start = 0
                for index in bytes.indices where bytes[index] < 0x20 || bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "\\") {
                    copy(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                    let byte = bytes[index]
                    switch byte {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                        put(UInt8(ascii: "\\"))
                        put(byte)
                    case 0x08: raw("\\b")
                    case 0x0C: raw("\\f")
                    case 0x0A: raw("\\n")
                    case 0x0D: raw("\\r")
                    case 0x09: raw("\\t")
                    default:
                        let digits: StaticString = "0123456789abcdef"
                        raw("\\u00")
                        put(digits.utf8Start[Int(byte >> 4)])
                        put(digits.utf8Start[Int(byte & 0xF)])
                    }
                    start = index + 1
                }
                copy(UnsafeBufferPointer(rebasing: bytes[start...]))
            }
            put(UInt8(ascii: "\""))
        }
    }
}
