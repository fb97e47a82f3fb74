import OfferErrors

/// The payload of a JWS as ``SignedDataChainVerifier`` decodes it: the expected type if it decodes, and `signedDate`
/// either way.
///
/// Decoding failures are kept, not thrown, so that a payload that is not of the expected type is reported as
/// ``SignedDataVerificationError/Code/malformedPayload`` only *after* the signature has been checked, and so that the
/// validation time can be read before the chain is verified.
struct SignedBody<Payload: Codable & Sendable>: Decodable {
    /// The payload, if it decoded as `Payload`.
    let payload: Payload?

    /// Why it did not decode, if it did not, in plain words (``DecodingProblem``).
    let decodingFailure: String?

    /// The payload's `signedDate` (ms since 1970), if it has an integer one.
    let signedDate: Int64?

    private enum Keys: String, CodingKey {
        case signedDate
    }

    init(from decoder: any Decoder) throws {
        self.signedDate = try? decoder.container(keyedBy: Keys.self).decodeIfPresent(Int64.self, forKey: .signedDate)
        do {
            self.payload = try Payload(from: decoder)
            self.decodingFailure = nil
        } catch {
            self.payload = nil
            self.decodingFailure = DecodingProblem.describe(error)
        }
    }
}
