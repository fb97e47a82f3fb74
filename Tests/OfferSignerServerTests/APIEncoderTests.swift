import Foundation
@testable import OfferSignerServer
import Testing

@Suite struct APIEncoderTests {
    struct Stamped: Encodable { var at: Date }

    @Test("dates are Unix milliseconds; a date beyond 64 bits of milliseconds is clamped, never trapped on")
    func datesAreMillisecondsAndClamped() throws {
        func encoded(_ date: Date) throws -> String { String(decoding: try JSONEncoder.api.encode(Stamped(at: date)), as: UTF8.self) }
        #expect(try encoded(Date(timeIntervalSince1970: 1_795_480_209.343)) == #"{"at":1795480209343}"#)
        // Date(appStoreMilliseconds: .max) read back from signed App Store data: exactly 2^63 ms after 1970.
        #expect(try encoded(Date(timeIntervalSince1970: Double(Int64.max) / 1000)) == #"{"at":9223372036854775807}"#)
        #expect(try encoded(Date(timeIntervalSince1970: -1e300)) == #"{"at":-9223372036854775808}"#)
    }
}
