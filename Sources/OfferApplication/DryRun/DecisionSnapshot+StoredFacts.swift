import Foundation
import OfferEligibility
import OfferModel
import Synchronization

extension DecisionSnapshot {
    /// The snapshot's text (``encoded()``) of a decision made over facts read as `storedFacts` — the customer's
    /// facts as the store keeps them, JSON with sorted keys and dates in milliseconds, the encoding of
    /// ``encoded()`` — made from that text instead of encoding the facts again: its `key` and `updatedAt` members
    /// blanked in place (``StoredFactsText/anonymized(_:bundleIdentifier:)``), the signatures inside the lookback
    /// appended. For facts the store encoded, the same text as ``encoded()`` byte for byte (so the same hash).
    /// Without stored text, or with one the scan does not follow: ``encoded()``.
    static func text(_ context: EligibilityContext, lookback: TimeInterval?, storedFacts: String?) throws -> String {
        guard let storedFacts, let facts = StoredFactsText.anonymized(storedFacts, bundleIdentifier: context.bundleIdentifier) else {
            return try DecisionSnapshot(context, lookback: lookback).encoded()
        }
        let issued = issuedSignatures(context, lookback: lookback)
        let issuedText = try StoredFactsText.issuedText(issued) ?? StoredFactsText.encode(issued)
        return "{\"f\":" + facts + ",\"i\":" + issuedText + "}"
    }
}

/// The customer's stored facts' JSON text, as the decision log's snapshot keeps it.
enum StoredFactsText {
    /// `text` — one JSON object — with its top-level `key` member's value replaced by the key of `bundleIdentifier`
    /// with an empty customer, and its `updatedAt` member's by the time 0, both as ``DecisionSnapshot/encoded()``
    /// writes them; the other members as they are, in their order. `nil` when `text` is not one object whose
    /// members this scan follows, or lacks either member, or has one twice: the caller encodes instead.
    static func anonymized(_ text: String, bundleIdentifier: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            var scan = Scan(bytes: bytes)
            var output: [UInt8] = []
            output.reserveCapacity(bytes.count + 64)
            var (sawKey, sawUpdatedAt) = (false, false)
            scan.skipSpace()
            guard scan.take(UInt8(ascii: "{")) else { return nil }
            output.append(UInt8(ascii: "{"))
            scan.skipSpace()
            if scan.take(UInt8(ascii: "}")) { return nil }
            while true {
                let memberStart = scan.index
                guard let name = scan.string() else { return nil }
                scan.skipSpace()
                guard scan.take(UInt8(ascii: ":")) else { return nil }
                scan.skipSpace()
                guard scan.value() else { return nil }
                if output.count > 1 { output.append(UInt8(ascii: ",")) }
                if equals(name, in: bytes, "key") {
                    guard !sawKey else { return nil }
                    sawKey = true
                    output.append(contentsOf: "\"key\":".utf8)
                    guard let key = blankKey(bundleIdentifier) else { return nil }
                    output.append(contentsOf: key.utf8)
                } else if equals(name, in: bytes, "updatedAt") {
                    guard !sawUpdatedAt else { return nil }
                    sawUpdatedAt = true
                    output.append(contentsOf: "\"updatedAt\":".utf8)
                    output.append(contentsOf: timeZero.utf8)
                } else {
                    output.append(contentsOf: bytes[memberStart..<scan.index])
                }
                scan.skipSpace()
                if scan.take(UInt8(ascii: ",")) {
                    scan.skipSpace()
                    continue
                }
                guard scan.take(UInt8(ascii: "}")) else { return nil }
                break
            }
            scan.skipSpace()
            guard scan.isAtEnd, sawKey, sawUpdatedAt else { return nil }
            output.append(UInt8(ascii: "}"))
            return String(decoding: output, as: UTF8.self)
        }
    }

    /// `value` as ``DecisionSnapshot/encoded()`` encodes its parts.
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// `issued` as ``encode(_:)`` writes it (keys sorted: `o`, `p`, `t`), written directly when every identifier is
    /// printable ASCII that JSON leaves as it is (not `"`, `\\` or `/`, which the encoder escapes); `nil` otherwise
    /// (the caller encodes).
    static func issuedText(_ issued: [DecisionSnapshot.Issued]) -> String? {
        var output = "["
        for (index, signature) in issued.enumerated() {
            guard isPlain(signature.offerIdentifier), isPlain(signature.productIdentifier) else { return nil }
            if index > 0 { output += "," }
            output += "{\"o\":\"" + signature.offerIdentifier + "\",\"p\":\"" + signature.productIdentifier + "\",\"t\":"
            output += String(signature.timestamp) + "}"
        }
        return output + "]"
    }

    /// Whether JSON's encoder writes `text` between its quotes as it is.
    private static func isPlain(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "/") }
    }

    /// The time 0 as the snapshot writes `updatedAt`.
    private static let timeZero: String = {
        let list = (try? encode([Date(timeIntervalSince1970: 0)])) ?? "[0]"
        return String(list.dropFirst().dropLast())
    }()

    /// The blanked key of each app met, encoded once (bounded: the configured apps are few).
    private static let blankKeys = Mutex<[String: String]>([:])

    private static func blankKey(_ bundleIdentifier: String) -> String? {
        if let known = blankKeys.withLock({ $0[bundleIdentifier] }) { return known }
        guard let encoded = try? encode(CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: "")) else { return nil }
        blankKeys.withLock { keys in
            if keys.count >= 256 { keys.removeAll() }
            keys[bundleIdentifier] = encoded
        }
        return encoded
    }

    /// Whether the member name at `range` (its raw text between the quotes) is `name`.
    private static func equals(_ range: Range<Int>, in bytes: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        return name.withUTF8Buffer { wanted in
            var offset = 0
            for index in range {
                guard bytes[index] == wanted[offset] else { return false }
                offset += 1
            }
            return true
        }
    }

    /// A forward scan over JSON text that checks every index before reading it.
    private struct Scan {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        /// Nesting deeper than this is refused (the facts are a few levels deep).
        static let maximumDepth = 64

        var isAtEnd: Bool { index >= bytes.count }

        static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }

        static func isDelimiter(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
        }

        mutating func skipSpace() {
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// A string; returns the range of its raw text between the quotes.
        mutating func string() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return start..<(index - 1)
                case UInt8(ascii: "\\"):
                    index += 2
                default:
                    index += 1
                }
            }
            return nil
        }

        /// Any value: a string, an object or an array (to its matching end, strings inside skipped as strings), or
        /// a literal or number (up to the next delimiter).
        mutating func value() -> Bool {
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case UInt8(ascii: "\""):
                        guard string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                        guard depth <= Self.maximumDepth else { return false }
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default:
                        break
                    }
                    index += 1
                }
                return false
            default:
                let start = index
                while index < bytes.count, !Self.isSpace(bytes[index]), !Self.isDelimiter(bytes[index]) { index += 1 }
                return index > start
            }
        }
    }
}
