/// Finds the first object key that appears twice in one JSON object.
///
/// JSON parsers disagree on duplicate keys (Foundation keeps the first, most others the last), so a validator
/// in front of the service could check one value while the service signs another. The API refuses such
/// bodies instead. The scan is iterative (no recursion, whatever the nesting) and linear in the body's size;
/// it does not validate the JSON otherwise: a body it cannot follow is left to the decoder to refuse.
enum JSONDuplicateKeys {
    /// The first key found twice in the same object (unescaped), or `nil`.
    static func firstDuplicate(in bytes: some Collection<UInt8>) -> String? {
        let bytes = Array(bytes)
        // One entry per open container: the keys seen so far for an object, `nil` for an array.
        var stack: [Set<String>?] = []
        var expectingKey = false
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"):
                stack.append([])
                expectingKey = true
                index += 1
            case UInt8(ascii: "["):
                stack.append(nil)
                expectingKey = false
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard !stack.isEmpty else { return nil }
                stack.removeLast()
                expectingKey = false
                index += 1
            case UInt8(ascii: ","):
                expectingKey = stack.last.map { $0 != nil } ?? false
                index += 1
            case UInt8(ascii: "\""):
                guard expectingKey, let last = stack.indices.last, var keys = stack[last] else {
                    guard let end = endOfString(in: bytes, from: index) else { return nil }  // a value: skipped, not decoded
                    index = end
                    continue
                }
                guard let (text, end) = string(in: bytes, from: index) else { return nil }
                if keys.contains(text) { return text }
                stack[last] = nil  // keeps `keys` uniquely referenced while it grows
                keys.insert(text)
                stack[last] = keys
                expectingKey = false
                index = end
            default:
                index += 1
            }
        }
        return nil
    }

    /// The index after the closing quote of the string starting at the quote at `start`, or `nil` where
    /// ``string(in:from:)`` gives up (no end, a `\u` without four hexadecimal digits).
    private static func endOfString(in bytes: [UInt8], from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else { return nil }
                if bytes[index + 1] == UInt8(ascii: "u") {
                    guard index + 6 <= bytes.count, bytes[(index + 2)..<(index + 6)].allSatisfy({ hexDigit($0) != nil }) else { return nil }
                    index += 6
                } else {
                    index += 2
                }
            default:
                index += 1
            }
        }
        return nil
    }

    /// The unescaped string starting at the quote at `start`, and the index after its closing quote.
    private static func string(in bytes: [UInt8], from start: Int) -> (String, Int)? {
        // Most strings have no escape: their bytes are the string.
        var end = start + 1
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            return (String(decoding: bytes[(start + 1)..<end], as: UTF8.self), end + 1)
        }
        return escapedString(in: bytes, from: start)
    }

    /// ``string(in:from:)`` for a string with escapes.
    private static func escapedString(in bytes: [UInt8], from start: Int) -> (String, Int)? {
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        var index = start + 1
        func flush() {
            scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
            raw.removeAll(keepingCapacity: true)
        }
        func hex4(at position: Int) -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = hexDigit(byte) else { return nil }
                value = value << 4 | digit
            }
            return value
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flush()
                return (String(scalars), index + 1)
            }
            guard byte == UInt8(ascii: "\\") else {
                raw.append(byte)
                index += 1
                continue
            }
            guard index + 1 < bytes.count else { return nil }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "u"):
                guard var value = hex4(at: index) else { return nil }
                index += 4
                if (0xD800..<0xDC00).contains(value), index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"),
                   bytes[index + 1] == UInt8(ascii: "u"), let low = hex4(at: index + 2), (0xDC00..<0xE000).contains(low) {
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                flush()
                scalars.append(Unicode.Scalar(value) ?? "\u{FFFD}")
            case UInt8(ascii: "b"): raw.append(0x08)
            case UInt8(ascii: "f"): raw.append(0x0C)
            case UInt8(ascii: "n"): raw.append(0x0A)
            case UInt8(ascii: "r"): raw.append(0x0D)
            case UInt8(ascii: "t"): raw.append(0x09)
            default: raw.append(escape)
            }
        }
        return nil
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
