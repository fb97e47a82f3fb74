/// String literals: escapes, surrogate pairs, raw control characters and UTF-8, as RFC 8259 and Unicode allow them.
extension StrictJSON.Scanner {
    /// A string literal starting at its opening quote; its text when `decoding` (for keys), else `nil`.
    mutating func string(decoding: Bool) throws(StrictJSON.Violation) -> String? {
        index += 1  // the opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flush(upTo end: Int) {
            guard decoding, end > runStart else { return }
            scalars.append(contentsOf: String(decoding: bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard !atEnd else { throw fail("a string without its closing quote") }
            let lead = byte
            switch lead {
            case UInt8(ascii: "\""):
                if decoding, scalars.isEmpty {
                    // No escape: the bytes are the text.
                    let text = String(decoding: bytes[runStart..<index], as: UTF8.self)
                    index += 1
                    return text
                }
                flush(upTo: index)
                index += 1
                return decoding ? String(scalars) : nil
            case UInt8(ascii: "\\"):
                flush(upTo: index)
                let scalar = try escape()
                if decoding { scalars.append(scalar) }
                runStart = index
            case 0x00..<0x20:
                throw fail("a raw control character (U+\(Self.hex(UInt32(lead)))) inside a string; escape it")
            case 0x20..<0x80:
                index += 1
            default:
                try utf8Sequence()
            }
        }
    }

    /// One escape sequence starting at its backslash; a `\u` high surrogate must be followed by a `\u` low one.
    mutating func escape() throws(StrictJSON.Violation) -> Unicode.Scalar {
        guard index + 1 < bytes.count else { throw fail("a string that ends in a backslash") }
        let kind = bytes[index + 1]
        switch kind {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"):
            index += 2
            return Unicode.Scalar(kind)
        case UInt8(ascii: "b"):
            index += 2
            return "\u{08}"
        case UInt8(ascii: "f"):
            index += 2
            return "\u{0C}"
        case UInt8(ascii: "n"):
            index += 2
            return "\n"
        case UInt8(ascii: "r"):
            index += 2
            return "\r"
        case UInt8(ascii: "t"):
            index += 2
            return "\t"
        case UInt8(ascii: "u"):
            let high = try hex4(at: index + 2)
            index += 6
            switch high {
            case 0xD800..<0xDC00:
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw fail("an unpaired surrogate escape (\\u\(Self.hex(high)))")
                }
                let low = try hex4(at: index + 2)
                guard (0xDC00..<0xE000).contains(low) else { throw fail("an unpaired surrogate escape (\\u\(Self.hex(high)))") }
                index += 6
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)) ?? "\u{FFFD}"
            case 0xDC00..<0xE000:
                throw fail("an unpaired surrogate escape (\\u\(Self.hex(high)))")
            default:
                return Unicode.Scalar(high) ?? "\u{FFFD}"
            }
        default:
            throw fail(kind < 0x80 && kind >= 0x20 ? "an invalid escape \\\(Character(Unicode.Scalar(kind)))" : "an invalid escape")
        }
    }

    func hex4(at position: Int) throws(StrictJSON.Violation) -> UInt32 {
        guard position + 4 <= bytes.count else { throw fail("a \\u escape without four hexadecimal digits") }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let digit: UInt32
            switch bytes[position + offset] {
            case let byte where (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte): digit = UInt32(byte - UInt8(ascii: "0"))
            case let byte where (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case let byte where (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("a \\u escape without four hexadecimal digits")
            }
            value = value << 4 | digit
        }
        return value
    }

    /// One well-formed UTF-8 sequence of two to four bytes (Unicode's table 3-7: no overlong form, no
    /// surrogate, nothing above U+10FFFF).
    mutating func utf8Sequence() throws(StrictJSON.Violation) {
        let lead = byte
        let count: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0:
            count = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED:
            count = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            count = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: count = 4
        case 0xF4:
            count = 4
            secondRange = 0x80...0x8F
        default: throw fail("invalid UTF-8")
        }
        guard index + count <= bytes.count, secondRange.contains(bytes[index + 1]) else { throw fail("invalid UTF-8") }
        for offset in 2..<count where !(0x80...0xBF).contains(bytes[index + offset]) {
            throw fail("invalid UTF-8")
        }
        index += count
    }

    static func describe(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "U+\(hex(UInt32(byte)))"
    }

    static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
