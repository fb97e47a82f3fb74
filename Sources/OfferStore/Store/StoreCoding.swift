import Foundation
import OfferModel

/// The JSON form of stored documents (customer facts, audit details): dates as Unix milliseconds, keys sorted.
enum StoreCoding {
    static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A customer's stored facts: ``StoredFactsDecoder`` for the form ``encode(_:)`` writes, `JSONDecoder` for
    /// anything else.
    static func decodeFacts(_ text: String) throws -> CustomerFacts {
        try StoredFactsDecoder.decode(text) ?? decode(CustomerFacts.self, from: text)
    }

    static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        do {
            return try decoder.decode(T.self, from: Data(text.utf8))
        } catch {
            throw OfferStoreError(.corruptRecord, "A stored \(T.self) could not be read.")
        }
    }
}
