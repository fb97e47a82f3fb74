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
            var seen = Set<String>()
            var more = try openObject()
            while more {
                let name = try memberName()
                guard seen.insert(name).inserted else { throw GiveUp() }
                switch name {
                case "key": key = try customerKey()
                case "subscriptions": subscriptions = try subscriptionsArray()
                case "storefront": storefront = try null() ? nil : string()
                case "flags": flags = try stringDictionary()
                case "grants": grants = try grantsArray()
                case "updatedAt": updatedAt = try date()
                default: throw GiveUp()
                }
                more = try moreMembers()
            }
            guard let key, let subscriptions, let flags, let grants, let updatedAt else { throw GiveUp() }
            return CustomerFacts(key: key, subscriptions: subscriptions, storefront: storefront, flags: flags, grants: grants, updatedAt: updatedAt)
        }

        mutating func customerKey() throws(GiveUp) -> CustomerKey {
            var bundleIdentifier: String?
            var applicationUsername: String?
            var seen = Set<String>()
            var more = try openObject()
            while more {
                let name = try memberName()
                guard seen.insert(name).inserted else { throw GiveUp() }
                switch name {
                case "bundleIdentifier": bundleIdentifier = try string()
                case "applicationUsername": applicationUsername = try string()
                default: throw GiveUp()
                }
                more = try moreMembers()
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
            var seen = Set<String>()
            var more = try openObject()
            while more {
                let name = try memberName()
                guard seen.insert(name).inserted else { throw GiveUp() }
                switch name {
                case "subscriptionGroupIdentifier": group = try string()
                case "productIdentifier": product = try string()
                case "state":
                    guard let value = SubscriptionState(rawValue: try string()) else { throw GiveUp() }
                    state = value
                case "autoRenewEnabled": autoRenewEnabled = try bool()
                case "renewalCount": renewalCount = try integer()
                case "hadIntroductoryOffer": hadIntroductoryOffer = try bool()
                case "downgraded": downgraded = try bool()
                case "originalTransactionId": originalTransactionId = try null() ? nil : string()
                case "autoRenewProductIdentifier":
                    autoRenewProductIdentifier = try null() ? nil : string()
                case "expiresDate": expiresDate = try null() ? nil : date()
                case "originalPurchaseDate": originalPurchaseDate = try null() ? nil : date()
                case "expirationIntent": expirationIntent = try null() ? nil : integer()
                case "lastSignedDate": lastSignedDate = try null() ? nil : date()
                default: throw GiveUp()
                }
                more = try moreMembers()
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
            var seen = Set<String>()
            var more = try openObject()
            while more {
                let name = try memberName()
                guard seen.insert(name).inserted else { throw GiveUp() }
                switch name {
                case "id": id = try string()
                case "productIdentifier": product = try string()
                case "offerIdentifier": offer = try string()
                case "grantedBy": grantedBy = try string()
                case "grantedAt": grantedAt = try date()
                case "expiresAt": expiresAt = try date()
                case "usedAt": usedAt = try null() ? nil : date()
                default: throw GiveUp()
                }
                more = try moreMembers()
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
            var more = try openObject()
            while more {
                let name = try memberName()
                guard dictionary.updateValue(try string(), forKey: name) == nil else { throw GiveUp() }
                more = try moreMembers()
            }
            return dictionary
        }

        // MARK: JSON

        /// Opens an object (`{`): whether a member follows (`false`: `{}`, consumed whole).
        mutating func openObject() throws(GiveUp) -> Bool {
            try expect(UInt8(ascii: "{"))
            guard try peek() == UInt8(ascii: "}") else { return true }
            position += 1
            return false
        }

        /// A member's name and its `:`; the reader is then at its value.
        mutating func memberName() throws(GiveUp) -> String {
            let name = try string()
            try expect(UInt8(ascii: ":"))
            return name
        }

        /// After a member's value: whether another follows (`,`) or the object ends (`}`).
        mutating func moreMembers() throws(GiveUp) -> Bool {
            switch try next() {
            case UInt8(ascii: ","): return true
            case UInt8(ascii: "}"): return false
            default: throw GiveUp()
            }
        }

        mutating func subscriptionsArray() throws(GiveUp) -> [SubscriptionFacts] {
            var elements: [SubscriptionFacts] = []
            var more = try openArray()
            while more {
                elements.append(try subscription())
                more = try moreElements()
            }
            return elements
        }

        mutating func grantsArray() throws(GiveUp) -> [CustomerServiceGrant] {
            var elements: [CustomerServiceGrant] = []
            var more = try openArray()
            while more {
                elements.append(try grant())
                more = try moreElements()
            }
            return elements
        }

        /// Opens an array (`[`): whether an element follows (`false`: `[]`, consumed whole).
        mutating func openArray() throws(GiveUp) -> Bool {
            try expect(UInt8(ascii: "["))
            guard try peek() == UInt8(ascii: "]") else { return true }
            position += 1
            return false
        }

        /// After an element: whether another follows (`,`) or the array ends (`]`).
        mutating func moreElements() throws(GiveUp) -> Bool {
            switch try next() {
            case UInt8(ascii: ","): return true
            case UInt8(ascii: "]"): return false
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
