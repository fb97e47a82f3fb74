import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import OfferSignerServer

/// Strict JSON on every JSON endpoint (issue 24): ``StrictJSON`` against an independent reference parser on many
/// thousands of bodies, and both front ends' verdicts against it.
@Suite struct StrictJSONTests {
    enum Verdict: Equatable, CustomStringConvertible {
        case valid, malformed, duplicate

        var description: String { "\(self == .valid ? "valid" : self == .malformed ? "malformed" : "duplicate")" }

        init(_ violation: StrictJSON.Violation?) {
            switch violation?.kind {
            case nil: self = .valid
            case .malformed: self = .malformed
            case .duplicateKey: self = .duplicate
            }
        }
    }

    static func verdict(_ text: String) -> Verdict { verdict(Array(text.utf8)) }
    static func verdict(_ bytes: [UInt8]) -> Verdict { Verdict(StrictJSON.violation(in: bytes)) }

    @Test(
        "RFC 8259 texts are accepted",
        arguments: [
            #"{}"#, #"[]"#, #"{"a":[1,-0,0.5,1e10,-2E-3,1.25e+2,true,false,null,"x"]}"#, "  \t\r\n{ \"a\" : \"b\" }\n ",
            #""\u00e9\uD83D\uDE00\"\\\/\b\f\n\r\t""#, "\"caf\u{E9} \u{1F600} \u{10FFFF}\"", #"{"a":{"a":{"a":1}}}"#,
            #"{"a":1,"b":{"a":2}}"#, "123", "null", #"{"":1}"#, #"{"\u0000":1}"#,
        ]
    )
    func accepted(_ text: String) {
        #expect(Self.verdict(text) == .valid)
    }

    @Test(
        "anything else is refused",
        arguments: [
            "", " ", "{", "}", "{,}", #"{"a":1,}"#, "[1,]", "[,1]", #"{"a" 1}"#, #"{a:1}"#, "{'a':1}", "[01]", "[1.]", "[.5]",
            "[1e]", "[-]", "[+1]", "[NaN]", "[Infinity]", "[tru]", "[True]", "[nul]", #"["\uZZZZ"]"#, #"["\u12"]"#,
            #"["\x41"]"#, #"["\'"]"#, #"["\uD800"]"#, #"["\uDC00"]"#, #"["\uD800\u0041"]"#, #"["\uD800x"]"#, "[\"a\tb\"]",
            "[\"a\nb\"]", "[\"\u{01}\"]", "[1] [2]", "{}x", "[1]]", #"["abc"#, #"["abc\"#, "\u{FEFF}{}", "/*c*/{}", "[1,,2]",
            #"{"a":1 "b":2}"#, "[\"a\" \"b\"]",
        ]
    )
    func refused(_ text: String) {
        #expect(Self.verdict(text) == .malformed)
    }

    @Test(
        "invalid UTF-8 is refused",
        arguments: [
            [0xC3], [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
            [0x80], [0xBF], [0xFE], [0xFF], [0xE2, 0x82], [0xF0, 0x9F, 0x98],
        ] as [[UInt8]]
    )
    func invalidUTF8(_ sequence: [UInt8]) {
        #expect(Self.verdict(Array("[\"a".utf8) + sequence + Array("b\"]".utf8)) == .malformed)
    }

    @Test(
        "a key twice in one object is a duplicate at every depth, escaped or not, canonically equal or not",
        arguments: [
            #"{"a":1,"a":2}"#, #"{"a":1,"\u0061":2}"#, #"{"x":[{"k":1,"k":1}]}"#, #"{"x":{"y":{"z":{"k":1,"j":2,"k":3}}}}"#,
            "{\"caf\u{E9}\":1,\"cafe\u{301}\":2}", #"{"\uD83D\uDE00":1,"😀":2}"#,
            #"""
            {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","note":"\uZZZZ","applicationUsername":"a",\#
            "applicationUsername":"b"}
            """#
            .replacingOccurrences(of: #""note":"\uZZZZ","#, with: #""note":"\u0041","#),
        ]
    )
    func duplicates(_ text: String) {
        #expect(Self.verdict(text) == .duplicate)
    }

    @Test("the body of the report: a skipped member's bad escape no longer hides the duplicate: the body is refused (malformed)")
    func reportedBypass() {
        let body =
            #"""
            {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","note":"\uZZZZ","applicationUsername":"dup-first",\#
            "applicationUsername":"dup-last"}
            """#
        #expect(Self.verdict(body) == .malformed)
    }

    @Test("nesting is bounded: 64 levels are read, 65 refused, 100,000 refused without recursion")
    func depth() {
        #expect(Self.verdict(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) == .valid)
        #expect(Self.verdict(String(repeating: "[", count: 65) + String(repeating: "]", count: 65)) == .malformed)
        #expect(Self.verdict(String(repeating: "{\"a\":", count: 100_000)) == .malformed)
    }

    @Test("on 40,000 generated and mutated bodies, StrictJSON gives the reference parser's verdict")
    func againstTheReference() {
        var random = SeededRandom(seed: 24)
        var counts = [Verdict.valid: 0, .malformed: 0, .duplicate: 0]
        for round in 0..<40_000 {
            let body = round % 2 == 0 ? Self.generated(&random) : Self.mutated(&random)
            let expected = ReferenceJSON.verdict(body)
            let actual = Self.verdict(body)
            counts[expected, default: 0] += 1
            if actual != expected {
                Issue.record("\(String(decoding: body, as: UTF8.self).debugDescription) \(body): reference \(expected), StrictJSON \(actual)")
                return
            }
        }
        // The corpus exercises every verdict in earnest.
        #expect(counts.values.allSatisfy { $0 > 800 }, "\(counts.map { "\($0.key): \($0.value)" })")
    }

    @Test("both front ends and every JSON endpoint give StrictJSON's verdict on 2,500 mutated bodies", arguments: FrontEnd.allCases)
    func frontEnds(_ frontEnd: FrontEnd) async throws {
        var random = SeededRandom(seed: 1)
        var bodies = (0..<2_500).map { _ in Self.mutated(&random, seeds: Self.requestSeeds) }
        bodies.append(
            Array(
                #"""
                {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","note":"\uZZZZ","applicationUsername":"dup-first",\#
                "applicationUsername":"dup-last"}
                """#
                .utf8
            )
        )
        bodies.append(
            Array(#"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","note":{"x":1,"x":2},"applicationUsername":"a"}"#.utf8)
        )
        bodies.append(Array(#"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"a",}"#.utf8))
        let all = bodies
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            for (index, body) in all.enumerated() {
                let expected = Self.verdict(body)
                let uri = index % 3 == 2 ? "/v1/offers/eligibility" : "/v1/offers/sign"
                let response = try await client.execute(
                    uri: uri,
                    method: .post,
                    headers: [.contentType: "application/json"],
                    body: ByteBuffer(bytes: body)
                )
                let code = response.status == .badRequest ? try response.decode(ErrorBody.self).error.code : nil
                switch expected {
                case .valid:
                    #expect(code != "malformed_json" && code != "duplicate_key", "\(uri) \(String(decoding: body, as: UTF8.self))")
                case .malformed:
                    #expect(code == "malformed_json", "\(uri) \(String(decoding: body, as: UTF8.self))")
                case .duplicate:
                    #expect(code == "duplicate_key", "\(uri) \(String(decoding: body, as: UTF8.self))")
                }
            }
        }
    }

    // MARK: Bodies

    static let requestSeeds = [
        #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#,
        #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1","extra":{"a":[1,2.5,"\u00e9"]}}"#,
        #"{ "productIdentifier" : "com.example.monthly" , "offerIdentifier" : "winback_50" , "format" : "legacy" }"#,
    ]

    static let seeds =
        requestSeeds + [
            #"{"a":{"b":[1,-2,3.5e-1,true,false,null]},"c":"\uD83D\uDE00\n"}"#, #"[{"k":1},{"k":2}]"#, #"{"k":"v","j":{"k":"w"}}"#,
        ]

    /// Bytes mutations draw from: JSON's punctuation, escapes, digits, letters of its words, controls, UTF-8 pieces.
    static let alphabet: [[UInt8]] =
        [
            "{", "}", "[", "]", "\"", ":", ",", "\\", "\\u", "\\uD800", "\\uDC00", "\\u00e9", "\\n", "\\x", " ", "\t", "0", "1", "9", "-",
            "+", ".", "e", "E", "a", "k", "true", "null", "fals", "\"k\":", "\"a\":1,", ",\"k\":1",
        ].map { Array($0.utf8) } + [[0x00], [0x1F], [0x7F], [0xC3, 0xA9], [0xC3], [0xA9], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98, 0x80], [0xFF]]

    static func mutated(_ random: inout SeededRandom, seeds: [String] = seeds) -> [UInt8] {
        var bytes = Array(seeds[random.below(seeds.count)].utf8)
        for _ in 0...random.below(3) {
            let position = random.below(bytes.count + 1)
            switch random.below(4) {
            case 0: bytes.insert(contentsOf: alphabet[random.below(alphabet.count)], at: position)
            case 1: if position < bytes.count { bytes.remove(at: position) }
            case 2: if position < bytes.count { bytes.replaceSubrange(position...position, with: alphabet[random.below(alphabet.count)]) }
            default:  // repeat a span (duplicates members, keys and values)
                let end = min(bytes.count, position + random.below(24))
                bytes.insert(contentsOf: bytes[position..<end], at: end)
            }
        }
        return bytes
    }

    /// A random JSON-ish text: mostly valid, with small keys (so duplicates happen) and occasional faults.
    static func generated(_ random: inout SeededRandom, depth: Int = 0) -> [UInt8] {
        func fault() -> Bool { random.below(60) == 0 }
        switch depth > 3 ? random.below(4) + 2 : random.below(6) {
        case 0:
            var out: [UInt8] = Array("{".utf8)
            for index in 0..<random.below(4) {
                if index > 0 || fault() { out += Array(",".utf8) }
                out += Array("\"\(["a", "b", "c", "\\u0061", "é", "e\u{301}"][random.below(6)])\"".utf8)
                out += Array((fault() ? " " : ":").utf8)
                out += generated(&random, depth: depth + 1)
            }
            return out + Array((fault() ? ",}" : "}").utf8)
        case 1:
            var out: [UInt8] = Array("[".utf8)
            for index in 0..<random.below(4) {
                if index > 0 { out += Array(",".utf8) }
                out += generated(&random, depth: depth + 1)
            }
            return out + Array((fault() ? ",]" : "]").utf8)
        case 2:
            let pieces = [
                "x", "\\\"", "\\\\", "\\/", "\\b", "\\u00E9", "\\uD83D\\uDE00", "é", "😀", fault() ? "\\uD83D" : "y", fault() ? "\u{01}" : "z",
                fault() ? "\\q" : "w",
            ]
            return Array(("\"" + (0..<random.below(4)).map { _ in pieces[random.below(pieces.count)] }.joined() + "\"").utf8)
        case 3:
            let numbers = ["0", "-0", "12", "-3.25", "1e5", "2E-7", "6.02e+23", fault() ? "01" : "1", fault() ? "1." : "2", fault() ? "-" : "3"]
            return Array(numbers[random.below(numbers.count)].utf8)
        default:
            let words = ["true", "false", "null", fault() ? "nul" : "null", fault() ? "True" : "true"]
            return Array(words[random.below(words.count)].utf8)
        }
    }
}

/// A deterministic generator (SplitMix64), so a failure repeats.
struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
}

/// An independent reader of RFC 8259, written plainly (recursive descent over Unicode scalars after the standard
/// library has validated the UTF-8), as the reference ``StrictJSON`` is compared with.
enum ReferenceJSON {
    struct Failure: Error {}

    static func verdict(_ bytes: [UInt8]) -> StrictJSONTests.Verdict {
        guard let text = String(validating: bytes, as: UTF8.self) else { return .malformed }
        var reader = Reader(scalars: Array(text.unicodeScalars))
        do {
            try reader.document()
            return reader.sawDuplicate ? .duplicate : .valid
        } catch {
            return .malformed
        }
    }

    struct Reader {
        let scalars: [Unicode.Scalar]
        var position = 0
        var sawDuplicate = false

        func peek() -> Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

        mutating func space() { while let s = peek(), s == " " || s == "\t" || s == "\n" || s == "\r" { position += 1 } }

        mutating func expect(_ scalar: Unicode.Scalar) throws(Failure) {
            guard peek() == scalar else { throw Failure() }
            position += 1
        }

        mutating func document() throws(Failure) {
            space()
            try value(depth: 0)
            space()
            guard position == scalars.count else { throw Failure() }
        }

        mutating func value(depth: Int) throws(Failure) {
            switch peek() {
            case "{":
                guard depth < 64 else { throw Failure() }
                position += 1
                space()
                if peek() == "}" {
                    position += 1
                    return
                }
                var keys: Set<String> = []
                while true {
                    space()
                    guard peek() == "\"" else { throw Failure() }
                    let key = try string()
                    if !keys.insert(key).inserted { sawDuplicate = true }
                    space()
                    try expect(":")
                    space()
                    try value(depth: depth + 1)
                    space()
                    if peek() == "," {
                        position += 1
                        continue
                    }
                    try expect("}")
                    return
                }
            case "[":
                guard depth < 64 else { throw Failure() }
                position += 1
                space()
                if peek() == "]" {
                    position += 1
                    return
                }
                while true {
                    space()
                    try value(depth: depth + 1)
                    space()
                    if peek() == "," {
                        position += 1
                        continue
                    }
                    try expect("]")
                    return
                }
            case "\"":
                _ = try string()
            case "t": try word("true")
            case "f": try word("false")
            case "n": try word("null")
            case let s? where s == "-" || ("0"..."9").contains(s): try number()
            default: throw Failure()
            }
        }

        mutating func word(_ text: String) throws(Failure) {
            for scalar in text.unicodeScalars { try expect(scalar) }
        }

        mutating func digits() throws(Failure) {
            guard let s = peek(), ("0"..."9").contains(s) else { throw Failure() }
            while let s = peek(), ("0"..."9").contains(s) { position += 1 }
        }

        mutating func number() throws(Failure) {
            if peek() == "-" { position += 1 }
            if peek() == "0" {
                position += 1
            } else {
                try digits()
            }
            if peek() == "." {
                position += 1
                try digits()
            }
            if peek() == "e" || peek() == "E" {
                position += 1
                if peek() == "+" || peek() == "-" { position += 1 }
                try digits()
            }
        }

        mutating func hex() throws(Failure) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let s = peek(), let digit = UInt32(String(s), radix: 16) else { throw Failure() }
                value = value * 16 + digit
                position += 1
            }
            return value
        }

        mutating func string() throws(Failure) -> String {
            try expect("\"")
            var out = String.UnicodeScalarView()
            while true {
                guard let s = peek() else { throw Failure() }
                position += 1
                switch s {
                case "\"": return String(out)
                case "\\":
                    guard let e = peek() else { throw Failure() }
                    position += 1
                    switch e {
                    case "\"", "\\", "/": out.append(e)
                    case "b": out.append("\u{8}")
                    case "f": out.append("\u{C}")
                    case "n": out.append("\n")
                    case "r": out.append("\r")
                    case "t": out.append("\t")
                    case "u":
                        let first = try hex()
                        if (0xDC00...0xDFFF).contains(first) { throw Failure() }
                        if (0xD800...0xDBFF).contains(first) {
                            try expect("\\")
                            try expect("u")
                            let second = try hex()
                            guard (0xDC00...0xDFFF).contains(second) else { throw Failure() }
                            out.append(Unicode.Scalar(0x10000 + (first - 0xD800) * 0x400 + (second - 0xDC00))!)
                        } else {
                            out.append(Unicode.Scalar(first)!)
                        }
                    default: throw Failure()
                    }
                default:
                    guard s.value >= 0x20 else { throw Failure() }
                    out.append(s)
                }
            }
        }
    }
}
