import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOEmbedded
import NIOHTTP1
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// Small refusals that must be exact (issue 38): the console's customer lookup validates as the admin API does,
/// another method on a route with a path parameter is 405 with `Allow`, lengths and chunk sizes no Int64 holds are
/// 400 at once, and a signed transaction a service cannot verify is refused with a code no client retries.
@Suite struct ExactRefusalTests {
    static let admin: HTTPFields = [.authorization: "Bearer \(ConsoleTests.token)"]

    @Test("the console's customer lookup takes the identifier exactly, as GET /admin/customers does: ' lead-space' is not lead-space")
    func consoleLookupIsExact() async throws {
        let fixture = try await ConsoleTests.Fixture()
        _ = try await fixture.store.updateCustomer(CustomerKey(bundleIdentifier: ConsoleTests.app, applicationUsername: "lead-space")) {
            $0.flags["owner"] = "lead-space-facts"
        }
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let exact = try await ConsoleTests.get(client, "/console/customers?bundleId=com.example.app&customer=lead-space", session)
            #expect(exact.text.contains("lead-space-facts"))
            for (console, admin) in [("+lead-space", "%20lead-space"), ("lead-space+", "lead-space%20"), ("%20%20lead-space", "%20%20lead-space")] {
                let page = try await ConsoleTests.get(client, "/console/customers?bundleId=com.example.app&customer=\(console)", session)
                let api = try await client.execute(uri: "/admin/customers/com.example.app/\(admin)", method: .get, headers: Self.admin)
                #expect(api.status == .ok && api.text.contains("\"known\":false"), "\(api.text)")
                #expect(page.status == .ok && !page.text.contains("lead-space-facts"), "\(console): another customer's facts")
                #expect(page.text.contains("has not heard of this customer"), "\(console)")
            }
            // What the admin API refuses, the console refuses, with the same status and message.
            for (console, admin) in [("%01lead", "%01lead"), ("lead%E2%81%A3space", "lead%E2%81%A3space")] {
                let page = try await ConsoleTests.get(client, "/console/customers?bundleId=com.example.app&customer=\(console)", session)
                let api = try await client.execute(uri: "/admin/customers/com.example.app/\(admin)", method: .get, headers: Self.admin)
                let error = try api.decode(ErrorBody.self).error
                #expect(api.status == .badRequest && page.status == .badRequest)
                #expect(page.text.contains(HTML.escape(error.message)), "\(error.message) not in \(page.text)")
            }
            let otherApp = try await ConsoleTests.get(client, "/console/customers?bundleId=com.example.app+&customer=lead-space", session)
            let apiOtherApp = try await client.execute(uri: "/admin/customers/com.example.app%20/lead-space", method: .get, headers: Self.admin)
            #expect(otherApp.status == .notFound && apiOtherApp.status == .notFound)
            #expect(try await ConsoleTests.get(client, "/console/customers?originalTransactionId=+2000000000000777", session).status == .badRequest)
        }
    }

    @Test("another method on a route with a path parameter is 405 with Allow, on the admin API and the console; an unknown path stays 404")
    func parameterisedRoutes405() async throws {
        try await ConsoleTests.Fixture().test { client in
            for (method, uri, allow) in [
                (HTTPRequest.Method.get, "/admin/keys/TESTKEY002/revoke", "POST"),
                (.post, "/admin/experiments/winback-q4", "GET, HEAD"),
                (.delete, "/admin/customers/com.example.app/user-1", "GET, HEAD"),
                (.get, "/admin/customers/com.example.app/user-1/grants", "POST"),
            ] {
                let response = try await client.execute(uri: uri, method: method)
                #expect(response.status == .methodNotAllowed, "\(method) \(uri)")
                #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                #expect(try response.decode(ErrorBody.self).error.code == "method_not_allowed")
            }
            let console = try await client.execute(uri: "/console/experiments/winback-q4", method: .post)
            #expect(console.status == .methodNotAllowed && console.headers[.allow] == "GET, HEAD" && console.text.contains("<h1>405"))
            #expect(try await client.execute(uri: "/admin/keys/TESTKEY002/nothing", method: .post).status == .notFound)
            #expect(try await client.execute(uri: "/admin/experiments/winback-q4/more", method: .get).status == .notFound)
        }
    }

    @Test("AllowedMethods reads the router's {parameter} and :parameter paths, and ** to the end")
    func allowedMethodsTable() {
        let table = AllowedMethods()
        table.record([("/a/{id}", "GET"), ("/a/:id/x", "POST"), ("/a/{id}/x", "DELETE"), ("/files/**", "GET"), ("/b/static", "PUT")])
        #expect(table.methods(for: "/a/1") == ["GET", "HEAD"])
        #expect(table.methods(for: "/a/1/x") == ["DELETE", "POST"])
        #expect(table.methods(for: "/a/1/x/y") == [])
        #expect(table.methods(for: "/files/one/two") == ["GET", "HEAD"])
        #expect(table.methods(for: "/b/static") == ["PUT"])
        #expect(table.methods(for: "/b/other") == [])
    }

    @Test(
        "a signedTransaction sent where no app can verify App Store data is 422 app_store_data_not_configured, without Retry-After",
        arguments: FrontEnd.allCases
    )
    func signedTransactionWithoutVerification(_ frontEnd: FrontEnd) async throws {
        let test = try TestService()
        try await test.application(frontEnd).test(frontEnd.setup) { client in
            let response = try await client.post(
                "/v1/offers/sign",
                json:
                    #"""
                    {"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1",\#
                    "signedTransaction":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}
                    """#
            )
            #expect(response.status == .unprocessableContent)
            #expect(response.headers[.retryAfter] == nil)
            let error = try response.decode(ErrorBody.self).error
            #expect(error.code == "app_store_data_not_configured" && error.field == "signedTransaction")
            #expect(error.message.contains("without signedTransaction"))
            // Without it, the same request signs.
            #expect(
                try await client.post(
                    "/v1/offers/sign",
                    json: #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#
                ).status == .ok
            )
        }
    }
}

/// A Content-Length or a chunk size no Int64 holds: 400 `malformed_request` at once, not a wait for the request
/// timeout; chunked requests around them are framed as before.
@Suite struct OversizedFramingTests {
    /// A request timeout longer than RawHTTP waits: a request held to it gets no answer here.
    static func application(signing: Bool) throws -> Application<RouterResponder<OfferSignerRequestContext>> {
        HTTPConformanceTests.application(
            try TestService(),
            signing: signing,
            limits: ConnectionLimits(idleTimeout: .seconds(30), requestTimeout: .seconds(30))
        )
    }

    static let chunkedHead =
        "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// A signing request whose body is sent in `pieces` chunks, with an extension on each size line and a trailer.
    static func chunkedSign(pieces: Int = 3) -> String {
        let body = Array(HTTPConformanceTests.body)
        let size = (body.count + pieces - 1) / pieces
        let chunks = stride(from: 0, to: body.count, by: size).map { String(body[$0..<min($0 + size, body.count)]) }
        return chunkedHead + chunks.map { "\(String($0.utf8.count, radix: 16));name=\"v\"\r\n\($0)\r\n" }.joined() + "0\r\nX-Trailer: 1\r\n\r\n"
    }

    @Test("Content-Length 2^63 and chunk sizes of 2^63 to 2^64 − 1 are 400 malformed_request at once", arguments: [false, true])
    func refusedAtOnce(signing: Bool) async throws {
        try await Self.application(signing: signing).test(.live) { client in
            let port = try #require(client.port)
            for request in [
                "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 9223372036854775808\r\n\r\n{}",
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                18446744073709551615\r\n\r\n{}
                """,
                Self.chunkedHead + "ffffffffffffffff\r\n{}",
                Self.chunkedHead + "8000000000000000;x=y\r\n",
                Self.chunkedHead + "2\r\n{}\r\n00000000000000000000FFFFFFFFFFFFFFFF\r\n",
            ] {
                let answer = try await RawHTTP.exchange(port: port, send: request, responses: nil)
                #expect(HTTPConformanceTests.statuses(answer) == ["400"], "\(request)")
                #expect(answer.contains(#"{"error":{"code":"malformed_request""#), "\(answer)")
            }
            // The size line split over three reads.
            let split = try await RawHTTP.session(
                port: port,
                sends: [(0, Self.chunkedHead + "ff"), (0.1, "ffffffffff"), (0.1, "ffff\r\n")],
                responses: nil
            )
            #expect(HTTPConformanceTests.statuses(split.text) == ["400"], "\(split.text)")
        }
    }

    static let huge = [
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n{}",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n8000000000000000\r\n",
    ]

    /// A channel with NIO's decoder, with the guard around it or not.
    static func channel(guarded: Bool) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let pending = ChunkSizeGuard.Pending()
        if guarded { try channel.pipeline.syncOperations.addHandler(ChunkSizeGuard(pending: pending)) }
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
        if guarded { try channel.pipeline.syncOperations.addHandler(ChunkSizeGuard.Heads(pending: pending)) }
        return channel
    }

    @Test("why the guard exists: NIO's decoder alone takes these framings and waits for the bytes they announce")
    func decoderAloneWaits() throws {
        for request in Self.huge + ["POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n{}"] {
            let channel = try Self.channel(guarded: false)
            try channel.writeInbound(ByteBuffer(string: request))  // no error
            var parts: [HTTPServerRequestPart] = []
            while let part = try channel.readInbound(as: HTTPServerRequestPart.self) { parts.append(part) }
            #expect(parts.count >= 1 && !parts.contains { if case .end = $0 { true } else { false } }, "\(request)")
            _ = try? channel.finish()
        }
    }

    @Test("the guard beside the decoder: a chunk size over Int64 is the decoder's invalidChunkSize; valid chunked requests pass untouched")
    func guardOnAChannel() throws {
        for request in Self.huge {
            let channel = try Self.channel(guarded: true)
            #expect(throws: HTTPParserError.invalidChunkSize) { try channel.writeInbound(ByteBuffer(string: request)) }
            _ = try? channel.finish()
        }
        let channel = try Self.channel(guarded: true)
        let valid = Self.chunkedSign() + "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" + Self.chunkedSign(pieces: 1)
        for byte in valid.utf8 { try channel.writeInbound(ByteBuffer(bytes: [byte])) }  // one byte a read
        var ends = 0
        while let part = try channel.readInbound(as: HTTPServerRequestPart.self) { if case .end = part { ends += 1 } }
        #expect(ends == 3)
        _ = try channel.finish()
    }

    @Test(
        """
        pipelined requests around them keep their framing: chunked with extensions and trailers, a chunk whose data looks like a size, \
        Content-Length
        """,
        arguments: [false, true]
    )
    func keepsStep(signing: Bool) async throws {
        try await Self.application(signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let lookalike = "\r\nffffffffffffffff\r\n\r\n"  // chunk data, not a size line
            let healthWithBody =
                """
                GET /healthz HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: \
                chunked\r\n\r\n\(String(lookalike.utf8.count, radix: 16))\r\n\(lookalike)\r\n0\r\n\r\n
                """
            let healthWithLength = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(lookalike.utf8.count)\r\n\r\n\(lookalike)"
            let requests = [
                Self.chunkedSign(), healthWithBody, "\r\nGET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", healthWithLength,
                HTTPConformanceTests.sign(), Self.chunkedSign(pieces: 1),
            ]
            let answer = try await RawHTTP.exchange(port: port, send: requests.joined() + Self.chunkedHead + "ffffffffffffffff\r\n", responses: nil)
            #expect(HTTPConformanceTests.statuses(answer) == ["200", "200", "200", "200", "200", "200", "400"], "\(answer)")
            // The same, a few bytes at a time.
            let text = Array(requests.joined().utf8)
            let sends = stride(from: 0, to: text.count, by: 7).map {
                (pause: 0.002, text: String(decoding: text[$0..<min($0 + 7, text.count)], as: UTF8.self))
            }
            let trickled = try await RawHTTP.session(
                port: port,
                sends: sends + [(0, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")],
                responses: nil
            )
            #expect(HTTPConformanceTests.statuses(trickled.text) == ["200", "200", "200", "200", "200", "200", "200"], "\(trickled.text)")
        }
    }
}
