import NIOCore

/// A value the API answers with whose JSON is written by hand, byte for byte as ``Foundation/JSONEncoder/api`` writes
/// it (keys sorted, `/` not escaped, the encoder's escapes), then a newline: the encoder costs microseconds an answer
/// on the signing path, this a few hundred nanoseconds. `APIEncoderTests` and `APIErrorMappingTests` compare the two
/// on hostile strings.
protocol APIJSONWritable {
    /// Writes the value's JSON to `output`, keys in sorted order; the same calls whether `output` measures or writes.
    func writeJSON<Output: APIJSONOutput>(to output: inout Output)
}

extension APIJSONWritable {
    /// The value's JSON and a newline: measured first (``APIJSONLength``), then written in one pass into a buffer's
    /// memory of that length (``APIJSONWriter``) — each ByteBuffer write costs a few hundred instructions. Both passes
    /// make the same calls, so the writer fills the memory exactly.
    var apiJSON: ByteBuffer {
        var measure = APIJSONLength()
        writeJSON(to: &measure)
        let length = measure.count + 1
        var buffer = ByteBufferAllocator().buffer(capacity: length)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { memory in
            var out = APIJSONWriter(memory: memory)
            writeJSON(to: &out)
            out.raw("\n")
            precondition(out.count == length, "the JSON written is not the length measured")
            return out.count
        }
        return buffer
    }
}

/// What ``APIJSONWritable/writeJSON(to:)`` writes to: text as it is (punctuation and keys), integers, and JSON string
/// literals.
protocol APIJSONOutput {
    mutating func raw(_ text: StaticString)
    mutating func integer(_ value: Int64)
    /// A JSON string literal as Foundation's JSONEncoder writes one with `.withoutEscapingSlashes`: `"` and `\`
    /// escaped, `\b \f \n \r \t` short, other control characters `\u00xx`, everything else as UTF-8.
    mutating func literal(_ string: String)
}

/// Counts the bytes ``APIJSONWriter`` writes for the same calls.
struct APIJSONLength: APIJSONOutput {
    var count = 0

    mutating func raw(_ text: StaticString) { count += text.utf8CodeUnitCount }

    mutating func integer(_ value: Int64) {
        var magnitude = value.magnitude
        count += value < 0 ? 2 : 1
        while magnitude >= 10 {
            magnitude /= 10
            count += 1
        }
    }

    mutating func literal(_ string: String) {
        var string = string
        count += string.withUTF8 { bytes in
            var length = bytes.count + 2
            for index in bytes.indices where APIJSONWriter.isEscaped(bytes[index]) {
                switch bytes[index] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x08, 0x0C, 0x0A, 0x0D, 0x09: length += 1
                default: length += 5
                }
            }
            return length
        }
    }
}

/// Writes into memory measured beforehand (``APIJSONLength``), runs of bytes with nothing to escape copied whole.
struct APIJSONWriter: APIJSONOutput {
    let memory: UnsafeMutableRawBufferPointer
    var count = 0

    /// Whether a literal writes `byte` escaped.
    static func isEscaped(_ byte: UInt8) -> Bool { byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") }

    mutating func raw(_ text: StaticString) {
        copy(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func integer(_ value: Int64) {
        var digits = String(value)
        digits.withUTF8 { copy($0) }
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

    mutating func literal(_ string: String) {
        put(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { bytes in
            var start = 0
            for index in bytes.indices where Self.isEscaped(bytes[index]) {
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
