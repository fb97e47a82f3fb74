import Foundation
import Hummingbird
import NIOCore
import Testing

@testable import OfferApplication
@testable import OfferSignerServer

/// ``SignOfferRequest/init(plainJSON:)`` against `JSONDecoder` (through ``Request/decodeJSON(as:from:)``): what it
/// reads it reads the same, and it declines everything else.
@Suite struct PlainJSONTests {
    /// The fields of a request, comparable.
    private func fields(_ request: SignOfferRequest) -> [String?] {
        [
            request.bundleIdentifier, request.productIdentifier, request.offerIdentifier, request.applicationUsername,
            request.format?.rawValue, request.transactionId, request.signedTransaction,
        ]
    }

    private func plain(_ text: String) -> SignOfferRequest? {
        SignOfferRequest(plainJSON: ByteBuffer(string: text))
    }

    private func decoded(_ text: String) -> SignOfferRequest? {
        decoded(ByteBuffer(string: text))
    }

    private func decoded(_ buffer: ByteBuffer) -> SignOfferRequest? {
        try? Request.decodeJSON(as: SignOfferRequest.self, from: buffer)
    }

    @Test("the common shapes are read, as JSONDecoder reads them")
    func commonShapes() throws {
        let bodies = [
            #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"8C1D-aa"}"#,
            #"""
            { "bundleIdentifier" : "com.example.app", "productIdentifier": "p", "offerIdentifier": "o", "applicationUsername": "u", "format": "l\#
            egacy" }
            """#,
            "\r\n\t{\"productIdentifier\":\"p\",\n\"offerIdentifier\":\"o\"}\n",
            #"""
            {"productIdentifier":"","offerIdentifier":"","applicationUsername":"","format":"jws","transactionId":"2000000123",\#
            "signedTransaction":"eyJ.a.b"}
            """#,
            #"{"offerIdentifier":"o","productIdentifier":"p"}"#,
        ]
        for body in bodies {
            let fast = try #require(plain(body), "\(body)")
            let full = try #require(decoded(body), "\(body)")
            #expect(fields(fast) == fields(full), "\(body)")
        }
    }

    @Test("everything outside the plain shape is declined, so the full decoder answers it")
    func declines() {
        let bodies = [
            "", " ", "{", "}", "[]", "null", #""a""#, "{}", #"{"productIdentifier":"p"}"#,  // not a request, or a field missing
            #"{"productIdentifier":"p","offerIdentifier":"o",}"#,  // trailing comma
            #"{"productIdentifier":"p","offerIdentifier":"o"} x"#,  // trailing text
            #"{"productIdentifier":"p","offerIdentifier":"o"}{}"#,
            #"{"productIdentifier":"p","offerIdentifier":"o","productIdentifier":"q"}"#,  // duplicate
            #"{"productIdentifier":"p","offerIdentifier":"o","extra":"x"}"#,  // a key of no field (JSONDecoder ignores it)
            #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":null}"#,
            #"{"productIdentifier":"p","offerIdentifier":"o","applicationUsername":1}"#,
            #"{"productIdentifier":"p\u0041","offerIdentifier":"o"}"#,  // an escape
            #"{"productIdentifier":"p\"q","offerIdentifier":"o"}"#,
            "{\"productIdentifier\":\"é\",\"offerIdentifier\":\"o\"}",  // beyond ASCII
            "{\"productIdentifier\":\"a\u{7F}\",\"offerIdentifier\":\"o\"}",  // DEL
            "{\"productIdentifier\":\"a\tb\",\"offerIdentifier\":\"o\"}",  // a control character
            #"{"productIdentifier":"p","offerIdentifier":"o","format":"LEGACY"}"#,  // an unknown format
            "\u{FEFF}{\"productIdentifier\":\"p\",\"offerIdentifier\":\"o\"}",  // a byte-order mark
            #"{'productIdentifier':'p','offerIdentifier':'o'}"#,
            #"{"productIdentifier" "p","offerIdentifier":"o"}"#,
            #"{"productIdentifier":"p","offerIdentifier":"o"#,
        ]
        for body in bodies {
            #expect(plain(body) == nil, "\(body)")
        }
    }

    @Test("on 20,000 mutated bodies, whatever the plain reader accepts the full decoder decodes to the same request")
    func mutations() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,\ "abcPpOoUu0193é.-_nul"#.utf8) + [0x09, 0x0A, 0x0D, 0x00, 0x7F, 0xC3, 0xA9]
        let seeds = [
            #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"8c1d-aa"}"#,
            #"{"bundleIdentifier":"b","productIdentifier":"p","offerIdentifier":"o","format":"legacy","transactionId":"1"}"#,
            #"{ "productIdentifier" : "p" , "offerIdentifier" : "o" , "applicationUsername" : "u" , "format" : "jws" }"#,
        ]
        var accepted = 0
        for _ in 0..<20_000 {
            var bytes = Array(seeds.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = alphabet.randomElement(using: &generator)!
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: if bytes.count > 1 { bytes.remove(at: position) }
                }
            }
            let buffer = ByteBuffer(bytes: bytes)
            guard let fast = SignOfferRequest(plainJSON: buffer) else { continue }
            accepted += 1
            let full = try #require(
                decoded(buffer),
                "accepted but not decodable: \(String(decoding: bytes, as: UTF8.self))"
            )
            #expect(fields(fast) == fields(full), "\(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(accepted > 1_000)  // the mutations that keep the shape (a changed letter in a value) are read
    }
}
