import Foundation
import OfferModel

/// A stored retention answer and the request it answered (original transaction and product), so that a
/// `requestIdentifier` reused by another request is refused instead of answered with someone else's offer.
struct StoredRetentionAnswer: Codable {
    var request: String
    var answer: RealtimeResponseBody

    init(request: String, answer: RealtimeResponseBody) {
        self.request = request
        self.answer = answer
    }

    init(decoding text: String) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(text.utf8))
    }

    func encoded() throws -> String {
        String(decoding: try RetentionAnswering.answerEncoder.encode(self), as: UTF8.self)
    }
}
