import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import OfferSignerServer
import OfferSigning
import Testing

/// One visible name, one customer (issue 24): an identifier not in Unicode NFC is refused with a clear 400, so
/// `capé` (U+00E9) and `cape` + U+0301 can never be two customers for caps and grants while rate limits, which
/// compare as Swift does, see one.
@Suite struct CustomerIdentifierNFCTests {
    static let composed = "cap\u{E9}"
    static let decomposed = "cape\u{301}"

    @Test func theCheckRefusesDecomposedFormsOnly() throws {
        #expect(throws: Never.self) { try PayloadField.validateApplicationUsername(Self.composed) }
        #expect(throws: Never.self) { try PayloadField.validateApplicationUsername("user-1") }
        #expect(throws: Never.self) { try PayloadField.validateApplicationUsername("\u{AC00}") }  // a precomposed Hangul syllable
        for value in [Self.decomposed, "\u{1100}\u{1161}", "A\u{30A}", "\u{212B}ngstr\u{F6}m", "o\u{308}\u{301}"] {
            #expect(throws: OfferSigningError.self, "\(value.unicodeScalars.map { String($0.value, radix: 16) })") {
                try PayloadField.validateApplicationUsername(value)
            }
        }
    }

    static func body(_ name: String) -> String {
        #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"\#(name)"}"#
    }

    @Test(arguments: FrontEnd.allCases)
    func aDecomposedNameIs400AndTheComposedOneIsServed(_ frontEnd: FrontEnd) async throws {
        try await TestService().application(frontEnd).test(frontEnd.setup) { client in
            let composed = try await client.post("/v1/offers/sign", json: Self.body(Self.composed))
            #expect(composed.status == .ok)
            for path in ["/v1/offers/sign", "/v1/offers/eligibility"] {
                let decomposed = try await client.post(path, json: Self.body(Self.decomposed))
                #expect(decomposed.status == .badRequest, "\(path)")
                let error = try decomposed.decode(ErrorBody.self).error
                #expect(error.code == "invalid_request" && error.field == "applicationUsername", "\(path)")
                #expect(error.message.contains("NFC"), "\(error.message)")
            }
            // Escaped in JSON, the same refusal.
            let escaped = try await client.post("/v1/offers/sign", json: Self.body(#"cape\u0301"#))
            #expect(escaped.status == .badRequest)
        }
    }
}
