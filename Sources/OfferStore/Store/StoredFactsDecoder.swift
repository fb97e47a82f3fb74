import Foundation
import OfferModel

/// Reads a customer's stored facts (``StoreCoding``'s JSON of ``CustomerFacts``) in one pass over its bytes, without
/// `JSONDecoder`: a decision under a policy reads one customer's facts per request, and `JSONDecoder`'s generic
/// machinery cost about as much as the store's read itself (docs/PERFORMANCE.md, "Where the time goes").
///
/// It reads the form ``StoreCoding/encode(_:)`` writes — every key of the model known, strings without escapes,
/// dates as Unix milliseconds, whitespace anywhere — and gives up (`nil`) on anything else: an escaped or unknown
/// character, a key the model does not have, a key twice, a number that is not the field's kind. The caller then
/// decodes the text with `JSONDecoder` (``StoreCoding/decodeFacts(_:)``), so what this reader cannot read is read
/// exactly as before, and what it reads is what `JSONDecoder` would read (`StoredFactsDecoderTests`).
enum StoredFactsDecoder {
    /// The facts, or `nil` when the text is not in the form this reader reads.
    static func decode(_ text: String) -> CustomerFacts? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            guard let facts = try? reader.customerFacts(), reader.atEnd() else { return nil }
            return facts
        }
    }

    /// Why the reader gave up; never shown (the caller decodes the text again with `JSONDecoder`).
    private struct GiveUp: Error {}

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        // MARK: the model

        mutating func customerFacts() throws(GiveUp) -> CustomerFacts {
            var key: CustomerKey?
            var subscriptions: [SubscriptionFacts]?
            var storefront: String?
            var flags: [String: String]?
            var grants: [CustomerServiceGrant]?
            var updatedAt: Date?
            try Self.members(of: &self) { (name, reader) throws(GiveUp) in
                switch name {
                case "key": key = try reader.customerKey()
                case "subscriptions": subscriptions = try reader.subscriptionsArray()
                case "storefront": storefront = try reader.null() ? nil : reader.string()
                case "flags": flags = try reader.stringDictionary()
                case "grants": grants = try reader.grantsArray()
                case "updatedAt": updatedAt = try reader.date()
                default: throw GiveUp()
                }
            }
            guard let key, let subscriptions, let flags, let grants, let updatedAt else { throw GiveUp() }
            return CustomerFacts(key: key, subscriptions: subscriptions, storefront: storefront, flags: flags, grants: grants, updatedAt: updatedAt)
        }

        mutating func customerKey() throws(GiveUp) -> CustomerKey {
            var bundleIdentifier: String?
            var applicationUsername: String?
            try Self.members(of: &self) { (name, reader) throws(GiveUp) in
                switch name {
                case "bundleIdentifier": bundleIdentifier = try reader.string()
                case "applicationUsername": applicationUsername = try reader.string()
                default: throw GiveUp()
                }
            }
            guard let bundleIdentifier, let applicationUsername else { throw GiveUp() }
            // As `Decodable` reads it: the stored value as it is (the initializer would lower-case it).
            var key = CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: "")
            key.applicationUsername = applicationUsername
            return key
        }

        mutating func subscription() throws(GiveUp) -> SubscriptionFacts {
            var group: String?
            var product: String?
            var state: SubscriptionState?
            var autoRenewEnabled: Bool?
            var renewalCount: Int?
            var hadIntroductoryOffer: Bool?
            var downgraded: Bool?
            var originalTransactionId: String?
            var autoRenewProductIdentifier: String?
            var expiresDate: Date?
            var originalPurchaseDate: Date?
            var expirationIntent: Int?
            var lastSignedDate: Date?
            try Self.members(of: &self) { (name, reader) throws(GiveUp) in
                switch name {
                case "subscriptionGroupIdentifier": group = try reader.string()
                case "productIdentifier": product = try reader.string()
                case "state":
                    guard let value = SubscriptionState(rawValue: try reader.string()) else { throw GiveUp() }
                    state = value
                case "autoRenewEnabled": autoRenewEnabled = try reader.bool()
                case "renewalCount": renewalCount = try reader.integer()
                case "hadIntroductoryOffer": hadIntroductoryOffer = try reader.bool()
                case "downgraded": downgraded = try reader.bool()
                case "originalTransactionId": originalTransactionId = try reader.null() ? nil : reader.string()
                case "autoRenewProductIdentifier":
                    autoRenewProductIdentifier = try reader.null() ? nil : reader.string()
                case "expiresDate": expiresDate = try reader.null() ? nil : reader.date()
                case "originalPurchaseDate": originalPurchaseDate = try reader.null() ? nil : reader.date()
                case "expirationIntent": expirationIntent = try reader.null() ? nil : reader.integer()
                case "lastSignedDate": lastSignedDate = try reader.null() ? nil : reader.date()
                default: throw GiveUp()
                }
            }
            guard let group, let product, let state, let autoRenewEnabled, let renewalCount, let hadIntroductoryOffer, let downgraded
            else { throw GiveUp() }
            return SubscriptionFacts(
                subscriptionGroupIdentifier: group,
                productIdentifier: product,
                originalTransactionId: originalTransactionId,
                state: state,
                autoRenewEnabled: autoRenewEnabled,
                autoRenewProductIdentifier: autoRenewProductIdentifier,
                expiresDate: expiresDate,
                originalPurchaseDate: originalPurchaseDate,
                renewalCount: renewalCount,
                hadIntroductoryOffer: hadIntroductoryOffer,
                expirationIntent: expirationIntent,
                downgraded: downgraded,
                lastSignedDate: lastSignedDate
            )
        }

        mutating func grant() throws(GiveUp) -> CustomerServiceGrant {
            var id: String?
            var product: String?
            var offer: String?
            var grantedBy: String?
            var grantedAt: Date?
            var expiresAt: Date?
            var usedAt: Date?
            try Self.members(of: &self) { (name, reader) throws(GiveUp) in
                switch name {
                case "id": id = try reader.string()
                case "productIdentifier": product = try reader.string()
                case "offerIdentifier": offer = try reader.string()
                case "grantedBy": grantedBy = try reader.string()
                case "grantedAt": grantedAt = try reader.date()
                case "expiresAt": expiresAt = try reader.date()
                case "usedAt": usedAt = try reader.null() ? nil : reader.date()
                default: throw GiveUp()
                }
            }
            guard let id, let product, let offer, let grantedBy, let grantedAt, let expiresAt else { throw GiveUp() }
            return CustomerServiceGrant(
                id: id,
                productIdentifier: product,
                offerIdentifier: offer,
                grantedBy: grantedBy,
                grantedAt: grantedAt,
                expiresAt: expiresAt,
                usedAt: usedAt
            )
        }

        mutating func stringDictionary() throws(GiveUp) -> [String: String] {
            var dictionary: [String: String] = [:]
            try Self.members(of: &self) { (name, reader) throws(GiveUp) in dictionary[name] = try reader.string() }
            return dictionary
        }

        // MARK: JSON

        /// `{"name": value, …}`, each value read by `member` with its name; a name twice gives up.
        static func members(of reader: inout Reader, _ member: (String, inout Reader) throws(GiveUp) -> Void) throws(GiveUp) {
            // The names met: a list while an object has few (the facts' objects have a dozen at most), which costs
            // no hashing; a set past that, so that an object of many names is not checked name by name.
            var names: [String] = []
            var seen = Set<String>()
            var more = try reader.open(UInt8(ascii: "{"), closedBy: UInt8(ascii: "}"))
            while more {
                let name = try reader.string()
                try reader.expect(UInt8(ascii: ":"))
                if names.count < 16 {
                    guard !names.contains(name) else { throw GiveUp() }
                    names.append(name)
                    if names.count == 16 { seen = Set(names) }
                } else {
                    guard seen.insert(name).inserted else { throw GiveUp() }
                }
                try member(name, &reader)
                more = try reader.more(closedBy: UInt8(ascii: "}"))
            }
        }

        mutating func subscriptionsArray() throws(GiveUp) -> [SubscriptionFacts] {
            try Self.array(of: &self) { (reader) throws(GiveUp) in try reader.subscription() }
        }

        mutating func grantsArray() throws(GiveUp) -> [CustomerServiceGrant] {
            try Self.array(of: &self) { (reader) throws(GiveUp) in try reader.grant() }
        }

        /// `[element, …]`, each element read by `element`.
        static func array<T>(of reader: inout Reader, _ element: (inout Reader) throws(GiveUp) -> T) throws(GiveUp) -> [T] {
            var elements: [T] = []
            var more = try reader.open(UInt8(ascii: "["), closedBy: UInt8(ascii: "]"))
            while more {
                elements.append(try element(&reader))
                more = try reader.more(closedBy: UInt8(ascii: "]"))
            }
            return elements
        }

        /// Opens an object or an array: whether something follows (`false`: empty, consumed whole).
        mutating func open(_ opening: UInt8, closedBy closing: UInt8) throws(GiveUp) -> Bool {
            try expect(opening)
            guard try peek() == closing else { return true }
            position += 1
            return false
        }

        /// After a member or an element: whether another follows (`,`) or `closing` ends them.
        mutating func more(closedBy closing: UInt8) throws(GiveUp) -> Bool {
            switch try next() {
            case UInt8(ascii: ","): return true
            case closing: return false
            default: throw GiveUp()
            }
        }

        /// Consumes `null` if it is next (`decodeIfPresent` reads it as `nil`).
        mutating func null() throws(GiveUp) -> Bool {
            guard try peek() == UInt8(ascii: "n") else { return false }
            try literal("null")
            return true
        }

        /// A string without escapes or control characters (anything else: give up).
        mutating func string() throws(GiveUp) -> String {
            try expect(UInt8(ascii: "\""))
            let start = position
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                    position += 1
                    return text
                }
                guard byte != UInt8(ascii: "\\"), byte >= 0x20 else { throw GiveUp() }
                position += 1
            }
            throw GiveUp()
        }

        mutating func bool() throws(GiveUp) -> Bool {
            if try peek() == UInt8(ascii: "t") {
                try literal("true")
                return true
            }
            try literal("false")
            return false
        }

        /// A whole number in `Int`'s range, written without a fraction or an exponent.
        mutating func integer() throws(GiveUp) -> Int {
            let text = try number()
            guard let value = Int(text) else { throw GiveUp() }
            return value
        }

        /// Unix milliseconds, as `JSONDecoder`'s `.millisecondsSince1970` reads them.
        mutating func date() throws(GiveUp) -> Date {
            guard let milliseconds = Double(try number()), milliseconds.isFinite else { throw GiveUp() }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }

        /// The text of a JSON number (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
        mutating func number() throws(GiveUp) -> Substring {
            skipWhitespace()
            let start = position
            func digits(_ reader: inout Reader) throws(GiveUp) {
                let first = reader.position
                while reader.position < reader.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(reader.bytes[reader.position]) {
                    reader.position += 1
                }
                guard reader.position > first else { throw GiveUp() }
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
            let integerStart = position
            try digits(&self)
            // A leading zero stands alone, as JSON says.
            guard bytes[integerStart] != UInt8(ascii: "0") || position == integerStart + 1 else { throw GiveUp() }
            if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
                position += 1
                try digits(&self)
            }
            if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
                position += 1
                if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
                try digits(&self)
            }
            return Substring(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
        }

        mutating func literal(_ word: StaticString) throws(GiveUp) {
            skipWhitespace()
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count else { throw GiveUp() }
            for index in 0..<count where bytes[position + index] != word.utf8Start[index] { throw GiveUp() }
            position += count
        }

        mutating func expect(_ byte: UInt8) throws(GiveUp) {
            guard try next() == byte else { throw GiveUp() }
        }

        /// The next byte that is not whitespace, consumed.
        mutating func next() throws(GiveUp) -> UInt8 {
            let byte = try peek()
            position += 1
            return byte
        }

        /// The next byte that is not whitespace, not consumed.
        mutating func peek() throws(GiveUp) -> UInt8 {
            skipWhitespace()
            guard position < bytes.count else { throw GiveUp() }
            return bytes[position]
        }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
                default: return
                }
            }
        }

        /// Whether only whitespace is left.
        mutating func atEnd() -> Bool {
            skipWhitespace()
            return position == bytes.count
        }
    }
}
