import Foundation
import Testing

@testable import AppStoreNotifications

/// The base64url the JWS reader decodes (``Base64URL``), against Foundation's base64 of the same bytes.
@Suite struct Base64URLTests {
    @Test func decodesWhatFoundationEncodes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.decode(Array(text.utf8)[...]) == bytes)
        }
    }

    @Test(
        "refuses what is not base64url",
        arguments: ["A", "AAAAA", "AA==", "AB+C", "AB/C", "AB C", "AB\nC", "ÄBCD", "AB.C"]
    )
    func refuses(text: String) {
        #expect(Base64URL.decode(Array(text.utf8)[...]) == nil)
    }

    @Test func splitsACompactJWSAtItsTwoDots() throws {
        let parts = try #require(CompactJWS(Array("aGVhZGVy.cGF5bG9hZA.c2ln".utf8)))
        #expect(String(decoding: parts.header, as: UTF8.self) == "aGVhZGVy")
        #expect(String(decoding: parts.payload, as: UTF8.self) == "cGF5bG9hZA")
        #expect(String(decoding: parts.signature, as: UTF8.self) == "c2ln")
        #expect(String(decoding: parts.signingInput, as: UTF8.self) == "aGVhZGVy.cGF5bG9hZA")
        for text in ["", "a", "a.b", "a.b.c.d", "...."] {
            #expect(CompactJWS(Array(text.utf8)) == nil)
        }
    }
}
