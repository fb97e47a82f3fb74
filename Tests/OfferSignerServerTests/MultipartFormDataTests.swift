import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import OfferSignerServer

/// The console's `multipart/form-data` parser (issue 38): one pass over the bytes, RFC 2046's framing (preamble,
/// epilogue, CRLF), bounded header blocks and parts; and a sign-in body it cannot read counts as a failed sign-in.
@Suite struct MultipartFormDataTests {
    static let boundary = "----WebKitFormBoundaryAbC123"

    static func parse(_ body: String, boundary: String = boundary, limit: Int = 2048) throws(MultipartFormData.Problem) -> [MultipartFormData.Part] {
        try MultipartFormData.parse(ByteBuffer(string: body), boundary: boundary, maximumContentLength: limit)
    }

    static func problem(_ body: String, limit: Int = 2048) -> MultipartFormData.Problem? {
        do {
            _ = try parse(body, limit: limit)
            return nil
        } catch {
            return error
        }
    }

    /// A body of `count` parts, each `name="f<i>"` with `value`.
    static func body(parts count: Int, value: String = "v") -> String {
        (0..<count).map { "--\(boundary)\r\nContent-Disposition: form-data; name=\"f\($0)\"\r\n\r\n\(value)\r\n" }.joined() + "--\(boundary)--\r\n"
    }

    @Test("a browser's body: fields and a file, names and filenames, content exactly between the blank line and the CRLF before the next delimiter")
    func browserBody() throws {
        let body =
            "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nabc\r\n"
                + """
                --\(Self.boundary)\r\ncontent-disposition: form-data; name=\"candidate\"; filename=\"policy.yaml\"\r\nContent-Type: \
                application/yaml\r\n\r\napps:\r\n  x: 1\r\n\r\n
                """
            + "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n"
            + "--\(Self.boundary)--\r\n"
        let parts = try Self.parse(body)
        #expect(
            parts == [
                .init(name: "csrf", filename: nil, content: "abc"),
                .init(name: "candidate", filename: "policy.yaml", content: "apps:\r\n  x: 1\r\n"),
                .init(name: "empty", filename: nil, content: ""),
            ]
        )
    }

    @Test("the preamble and the epilogue are ignored; transport padding after a delimiter is allowed")
    func preambleAndEpilogue() throws {
        let body =
            """
            This is the preamble.\r\nIt says nothing.\r\n--\(Self.boundary)  \t\r\nContent-Disposition: form-data; \
            name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--  \r\nThe epilogue, with --\(Self.boundary) in it.\r\n
            """
        #expect(try Self.parse(body) == [.init(name: "a", filename: nil, content: "1")])
        // A boundary not at the start of a line is not a delimiter: all of it is preamble, up to the closing line…
        #expect(try Self.parse("preamble--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--") == [])
        // …and without one, there is no delimiter at all.
        #expect(Self.problem("preamble--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1") == .noBoundary)
    }

    @Test("CRLF: a lone LF is content, not a line end; the CRLF before a delimiter belongs to the delimiter")
    func lineEnds() throws {
        let body =
            "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nline\nnext\r\n\n--\(Self.boundary)\n\r\n--\(Self.boundary)--"
        #expect(try Self.parse(body) == [.init(name: "a", filename: nil, content: "line\nnext\r\n\n--\(Self.boundary)\n")])
        // A header block ended by LF LF is not a header block.
        #expect(Self.problem("--\(Self.boundary)\nContent-Disposition: form-data; name=\"a\"\n\n1\r\n--\(Self.boundary)--") == .malformed)
        #expect(Self.problem("--\(Self.boundary)\r\nContent-Disposition: form-data;\rname=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--") == .malformed)
    }

    @Test("a body that ends before its closing delimiter is refused, wherever it stops")
    func missingClosingDelimiter() {
        let complete = Self.body(parts: 2)
        let cut = complete.replacingOccurrences(of: "--\(Self.boundary)--\r\n", with: "")
        #expect(Self.problem(cut) == .missingClosingDelimiter)
        #expect(Self.problem(cut + "--\(Self.boundary)") == .missingClosingDelimiter)
        #expect(Self.problem(cut + "--\(Self.boundary)-") == .missingClosingDelimiter)
        #expect(Self.problem("--\(Self.boundary)") == .missingClosingDelimiter)
        #expect(Self.problem(cut + "--\(Self.boundary)x\r\n") == .malformed)  // another boundary that starts the same
        #expect(Self.problem("--\(Self.boundary)--") == nil)  // no parts at all is a form without fields
    }

    @Test("a part's header block is bounded: 8 KiB and 8 lines; every part needs Content-Disposition form-data with a name")
    func headerBlock() {
        let long = "X-Padding: " + String(repeating: "a", count: MultipartFormData.maximumHeaderBlock)
        #expect(
            Self.problem("--\(Self.boundary)\r\n\(long)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--")
                == .headerBlockTooLarge
        )
        // Never ended: the search for the blank line stops at the bound.
        #expect(Self.problem("--\(Self.boundary)\r\n\(long + long)\r\n--\(Self.boundary)--") == .headerBlockTooLarge)
        let lines = (0..<MultipartFormData.maximumHeaderLines).map { "X-\($0): y\r\n" }.joined()
        #expect(
            Self.problem("--\(Self.boundary)\r\n\(lines)Content-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--")
                == .headerBlockTooLarge
        )
        #expect(Self.problem("--\(Self.boundary)\r\nContent-Type: text/plain\r\n\r\n1\r\n--\(Self.boundary)--") == .noName)
        #expect(Self.problem("--\(Self.boundary)\r\n\r\n1\r\n--\(Self.boundary)--") == .noName)
        #expect(Self.problem("--\(Self.boundary)\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--") == .malformed)
        #expect(Self.problem("--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\r\n\r\n1\r\n--\(Self.boundary)--") == .malformed)
        #expect(
            Self.problem("--\(Self.boundary)\r\n folded: x\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--\(Self.boundary)--")
                == .malformed
        )
    }

    @Test("parts are bounded, and so is each content; a content must be UTF-8")
    func bounds() {
        #expect(throws: Never.self) { try Self.parse(Self.body(parts: MultipartFormData.maximumParts)) }
        #expect(Self.problem(Self.body(parts: MultipartFormData.maximumParts + 1)) == .tooManyParts)
        #expect(Self.problem(Self.body(parts: 1, value: String(repeating: "x", count: 11)), limit: 10) == .contentTooLong)
        var bytes = ByteBuffer(string: "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n")
        bytes.writeBytes([0xC3, 0x28])
        bytes.writeString("\r\n--\(Self.boundary)--")
        #expect(throws: MultipartFormData.Problem.notUTF8) { try MultipartFormData.parse(bytes, boundary: Self.boundary, maximumContentLength: 100) }
    }

    @Test("a delimiter is found whatever precedes it: near-misses of the boundary do not hide it")
    func nearMisses() throws {
        // Prefixes of the delimiter over and over (what makes a naive search slow and a wrong fallback miss).
        let noise = String(repeating: "\r\n--\(Self.boundary.dropLast())\r\n-", count: 20)
        let body = "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n\(noise)\r\n--\(Self.boundary)--"
        #expect(try Self.parse(body, limit: 10_000) == [.init(name: "a", filename: nil, content: noise)])
        #expect(BytePattern(Array("aab".utf8)).firstIndex(in: UnsafeRawBufferPointer(start: nil, count: 0), from: 0) == nil)
        let haystack = Array("aaaab".utf8)
        #expect(haystack.withUnsafeBytes { BytePattern(Array("aab".utf8)).firstIndex(in: $0, from: 0) } == 2)
        #expect(haystack.withUnsafeBytes { BytePattern(Array("abab".utf8)).firstIndex(in: $0, from: 0) } == nil)
        #expect(Array("ababcabab".utf8).withUnsafeBytes { BytePattern(Array("abab".utf8)).firstIndex(in: $0, from: 1) } == 5)
    }

    // MARK: Over HTTP

    @Test("a sign-in body that is not a form counts as a failed sign-in: 400 while under the limit, then 429")
    func malformedSignInIsThrottled() async throws {
        try await ConsoleTests.Fixture().test { client in
            func malformed() async throws -> TestResponse {
                try await client.execute(
                    uri: "/console/login",
                    method: .post,
                    headers: [
                        .contentType: "multipart/form-data; boundary=\(Self.boundary)"
                    ],
                    body: ByteBuffer(string: "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nno closing delimiter")
                )
            }
            for _ in 0..<Int(AdminAuthenticationMiddleware.failureBurst) {
                let refused = try await malformed()
                #expect(refused.status == .badRequest)
                #expect(refused.text.contains("multipart/form-data"))
            }
            let throttled = try await malformed()
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.headers[.retryAfter] != nil)
            // The limiter is the admin API's: a wrong token is throttled too now.
            #expect(try await ConsoleTests.post(client, "/console/login", [("token", "wrong-token-wrong-token")]).status == .tooManyRequests)
        }
    }

    @Test("a well-formed multipart sign-in signs in")
    func multipartSignIn() async throws {
        try await ConsoleTests.Fixture().test { client in
            let response = try await client.execute(
                uri: "/console/login",
                method: .post,
                headers: [
                    .contentType: "multipart/form-data; boundary=\(Self.boundary)"
                ],
                body: ByteBuffer(
                    string:
                        """
                        --\(Self.boundary)\r\nContent-Disposition: form-data; \
                        name=\"token\"\r\n\r\n\(ConsoleTests.token)\r\n--\(Self.boundary)--\r\n
                        """
                )
            )
            #expect(response.status == .seeOther)
            #expect(response.headers[.setCookie] != nil)
        }
    }

    @Test("64 KiB on the policy form: many tiny parts are refused by count, no boundary is refused, a big file part parses")
    func largeBodies() async throws {
        try await ConsoleTests.Fixture().test { client in
            let session = try await ConsoleTests.signIn(client)
            func post(_ body: String) async throws -> TestResponse {
                try await client.execute(
                    uri: "/console/policy",
                    method: .post,
                    headers: [
                        .contentType: "multipart/form-data; boundary=\(Self.boundary)", .cookie: session.cookie,
                    ],
                    body: ByteBuffer(string: body)
                )
            }
            // 64 KiB of one-byte parts, the CSRF token first.
            let csrf = "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(session.csrf)\r\n"
            var tiny = csrf
            while tiny.utf8.count < 64 * 1024 { tiny += "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n" }
            let many = try await post(tiny + "--\(Self.boundary)--\r\n")
            #expect(many.status == .badRequest)
            #expect(many.text.contains("more than \(MultipartFormData.maximumParts) parts"), "\(many.text)")
            // 64 KiB with no boundary anywhere.
            let none = try await post(String(repeating: "-", count: 64 * 1024))
            #expect(none.status == .badRequest)
            #expect(none.text.contains("not valid multipart/form-data"))
            // 64 KiB of near-misses of the boundary inside one part: read to the end, then the form's own checks.
            let noise = String(repeating: "\r\n--\(Self.boundary.dropLast())", count: 64 * 1024 / (Self.boundary.utf8.count + 3))
            let big = try await post(
                csrf + "--\(Self.boundary)\r\nContent-Disposition: form-data; name=\"candidate\"\r\n\r\n\(noise)\r\n--\(Self.boundary)--\r\n"
            )
            #expect(!big.text.contains("not valid multipart/form-data") && !big.text.contains("parts;"), "\(big.status) \(big.text.prefix(300))")
            #expect(big.status != .forbidden)  // the CSRF token was found after the parse
        }
    }
}
