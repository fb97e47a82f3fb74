import Foundation
import NIOCore
import OfferSigning
import Testing

@testable import OfferApplication
@testable import OfferSignerServer

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

    /// A signed bundle with `text` in every string field.
    private func bundle(_ text: String, timestamp: Int64) -> SignedLegacyOffer {
        var offer = SignedLegacyOffer(
            bundleIdentifier: "b" + text,
            productIdentifier: text + "p",
            offerIdentifier: text,
            applicationUsername: text,
            keyIdentifier: "K" + text,
            nonce: text,
            timestamp: timestamp,
            signature: text + "=="
        )
        offer.format = text
        return offer
    }

    @Test("the signed bundle's hand-written JSON is byte for byte what JSONEncoder.api writes, then a newline, for hostile strings too")
    func signedBundleMatchesTheEncoder() throws {
        var texts = [
            "", "user-0001", "com.example/monthly", "quote\"back\\slash", "tab\tnew\nline\r\u{08}\u{0C}",
            "nul\u{0}unit\u{1F}del\u{7F}", "é ü 漢字 🎟️ \u{2028}\u{2029}", "</script>", "\u{FEFF}bom", "a\u{0301}",
        ]
        texts.append(String((0..<128).map { Character(Unicode.Scalar(UInt8($0))) }))
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let scalars = (0..<Int.random(in: 0...24, using: &generator)).compactMap { _ in
                Unicode.Scalar(
                    [
                        UInt32.random(in: 0..<0x80, using: &generator), UInt32.random(in: 0..<0x3000, using: &generator),
                        UInt32.random(in: 0x1F000..<0x1F700, using: &generator),
                    ].randomElement(using: &generator)!
                )
            }
            texts.append(String(String.UnicodeScalarView(scalars)))
        }
        for (index, text) in texts.enumerated() {
            let timestamp = [Int64.min, -1, 0, 1_700_000_000_000, Int64.max][index % 5]
            let offer = bundle(text, timestamp: timestamp)
            let expected = Array(try JSONEncoder.api.answer(offer).readableBytesView)
            let written = offer.apiJSON
            #expect(String(buffer: written) == String(decoding: expected, as: UTF8.self), "\(text.debugDescription)")
            #expect(Array(written.readableBytesView) == expected)
            #expect(expected.last == UInt8(ascii: "\n"))
        }
    }
}
