/// The verdict of RFC 8259 on a request body, given before any decoder reads it.
///
/// JSON parsers disagree on what they forgive — duplicate keys (Foundation keeps the first, most others the last),
/// trailing commas, bad escapes, unpaired surrogates, raw control characters, invalid UTF-8 — so a validator in
/// front of the service could check one value while the service signs another. Every JSON body the API reads
/// passes this check first, on both front ends, so there is one verdict: RFC 8259's grammar and nothing more
/// (no byte order mark, no comments, no `NaN`), valid UTF-8, every object's keys distinct at every depth —
/// including members the service ignores — and nesting at most ``maximumDepth`` deep.
///
/// Two keys are the same when they are the same text after unescaping, compared as Swift compares strings
/// (canonical equivalence), since that is how a decoder's dictionary would see them. A body that is not JSON is
/// `malformed` wherever its duplicate key is; a duplicate is reported only in an otherwise valid text.
///
/// The scan is iterative (no recursion, whatever the nesting), linear in the body's size, and never traps.
package enum StrictJSON {
    /// The deepest nesting of objects and arrays a body may have.
    static let maximumDepth = 64

    /// What is wrong with a body.
    struct Violation: Error, Equatable {
        enum Kind: Equatable {
            /// Not RFC 8259 JSON.
            case malformed
            /// A key appears twice in one object (the key, unescaped, at most 64 characters).
            case duplicateKey(String)
        }

        var kind: Kind
        /// The byte offset where the problem was found.
        var offset: Int
        /// What is wrong, in plain words, and what to send instead.
        var message: String
    }

    /// `nil` when `bytes` is one RFC 8259 JSON text with no duplicate key and no deeper nesting than
    /// ``maximumDepth``; the first problem otherwise.
    static func violation(in bytes: UnsafeRawBufferPointer) -> Violation? {
        var scanner = Scanner(bytes: bytes)
        do {
            try scanner.text()
            return scanner.duplicate
        } catch {
            return error
        }
    }

    /// ``violation(in:)`` for any contiguous bytes.
    static func violation(in bytes: some Sequence<UInt8>) -> Violation? {
        let result = bytes.withContiguousStorageIfAvailable { buffer in violation(in: UnsafeRawBufferPointer(buffer)) }
        if let result { return result }
        return Array(bytes).withUnsafeBytes { violation(in: $0) }
    }

    private enum Frame {
        case array
        case object(Set<String>)
    }

    struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        /// The first key found twice; reported once the whole text is known to be JSON (a malformed body is
        /// malformed, wherever its duplicate is).
        var duplicate: Violation?

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
        }

        func fail(_ message: String) -> Violation {
            Violation(
                kind: .malformed,
                offset: index,
                message:
                    """
                    The request body is not valid JSON (RFC 8259): \(message) at byte \(index); send one JSON object with Content-Type: \
                    application/json.
                    """
            )
        }

        var atEnd: Bool { index >= bytes.count }

        var byte: UInt8 { bytes[index] }

        private mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        /// A whole JSON text: one value between optional white space.
        mutating func text() throws(Violation) {
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
                throw fail("a byte order mark before the JSON text")
            }
            skipSpace()
            if atEnd { throw fail(bytes.isEmpty ? "the body is empty" : "the body holds only white space") }
            var stack: [Frame] = []
            while true {
                // A value starts here.
                skipSpace()
                guard !atEnd else { throw fail("the body ends where a value should be") }
                var complete = true
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard stack.count < StrictJSON.maximumDepth else {
                        throw fail("objects and arrays nested more than \(StrictJSON.maximumDepth) deep")
                    }
                    let isObject = byte == UInt8(ascii: "{")
                    index += 1
                    skipSpace()
                    if !atEnd, byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        index += 1  // empty
                    } else if isObject {
                        var keys = Set<String>()
                        try member(into: &keys)
                        stack.append(.object(keys))
                        complete = false
                    } else {
                        stack.append(.array)
                        complete = false
                    }
                case UInt8(ascii: "\""):
                    _ = try string(decoding: false)
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    try number()
                case UInt8(ascii: "t"):
                    try literal("true")
                case UInt8(ascii: "f"):
                    try literal("false")
                case UInt8(ascii: "n"):
                    try literal("null")
                case UInt8(ascii: "]"), UInt8(ascii: "}"):
                    throw fail(stack.isEmpty ? "a closing bracket with nothing open" : "a trailing comma before the closing bracket")
                default:
                    throw fail(
                        byte < 0x80
                            ? "an unexpected character \(Self.describe(byte)) where a value should be" : "a non-ASCII byte where a value should be"
                    )
                }
                guard complete else { continue }
                // After a value: close what ends here, or go on after a comma.
                closing: while true {
                    skipSpace()
                    guard let top = stack.last else {
                        guard atEnd else { throw fail("text after the JSON value") }
                        return
                    }
                    guard !atEnd else { throw fail("the body ends inside an unclosed object or array") }
                    switch (top, byte) {
                    case (.array, UInt8(ascii: ",")):
                        index += 1
                        break closing
                    case (.object(var keys), UInt8(ascii: ",")):
                        index += 1
                        skipSpace()
                        stack[stack.count - 1] = .array  // keeps `keys` uniquely referenced while it grows
                        try member(into: &keys)
                        stack[stack.count - 1] = .object(keys)
                        break closing
                    case (.array, UInt8(ascii: "]")), (.object, UInt8(ascii: "}")):
                        index += 1
                        stack.removeLast()
                    case (.array, _):
                        throw fail("a missing comma or ] after an array element")
                    case (.object, _):
                        throw fail("a missing comma or } after an object member")
                    }
                }
            }
        }

        /// A member's key and its colon; the value follows. Refuses a key already in `keys`.
        private mutating func member(into keys: inout Set<String>) throws(Violation) {
            guard !atEnd else { throw fail("the body ends where an object key should be") }
            guard byte == UInt8(ascii: "\"") else {
                throw fail(byte == UInt8(ascii: "}") ? "a trailing comma before }" : "an object key that is not a string")
            }
            let start = index
            let key = try string(decoding: true) ?? ""
            if !keys.insert(key).inserted, duplicate == nil {
                let shown = String(key.prefix(64))
                duplicate = Violation(
                    kind: .duplicateKey(shown),
                    offset: start,
                    message: "The key \(shown) appears twice in one JSON object; send each key once."
                )
            }
            skipSpace()
            guard !atEnd, byte == UInt8(ascii: ":") else { throw fail("a missing colon after an object key") }
            index += 1
        }

        private mutating func literal(_ word: StaticString) throws(Violation) {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("an unknown word (JSON has true, false and null)") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
                throw fail("an unknown word (JSON has true, false and null)")
            }
            index += count
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        private mutating func number() throws(Violation) {
            func isDigit(_ position: Int) -> Bool {
                position < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position])
            }
            if byte == UInt8(ascii: "-") { index += 1 }
            guard isDigit(index) else { throw fail("a minus sign without digits") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
                if isDigit(index) { throw fail("a number with a leading zero") }
            } else {
                while isDigit(index) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard isDigit(index) else { throw fail("a decimal point without digits after it") }
                while isDigit(index) { index += 1 }
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard isDigit(index) else { throw fail("an exponent without digits") }
                while isDigit(index) { index += 1 }
            }
        }
    }
}

extension StrictJSON {
    /// What `data` breaks of strict JSON, in plain words, or `nil`: the command line reads its JSON inputs as the
    /// HTTP API does (`offer-signer verify`).
    package static func problem(in data: some Sequence<UInt8>) -> String? {
        violation(in: data)?.message
    }
}
