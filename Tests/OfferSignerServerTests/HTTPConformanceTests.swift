import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferSignerServer
import Testing

/// HTTP/1.1 as RFC 9110 and RFC 9112 say (issue 24), on live sockets through the service's own channel, for both
/// front ends: the router alone, and the event-loop signing path in front of it.
@Suite struct HTTPConformanceTests {
    static let body = #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#

    /// `signing`: with the event-loop signing path (the router alone otherwise).
    static func application(
        _ test: TestService,
        signing: Bool,
        limits: ConnectionLimits = ConnectionLimits(idleTimeout: .seconds(8), requestTimeout: .seconds(1))
    ) -> Application<RouterResponder<OfferSignerRequestContext>> {
        makeApplication(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil)),
            signing: signing
                ? EventLoopSigning(signing: Signing(pipeline: test.service), authenticator: nil, limits: RateLimits(.none), serverName: nil) : nil,
            limits: limits,
            logger: Logger(label: "test")
        )
    }

    static func sign(_ extraHeaders: String = "", body: String = body) -> String {
        """
        POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\(extraHeaders)Content-Length: \
        \(body.utf8.count)\r\n\r\n\(body)
        """
    }

    static func statuses(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
    }

    @Test("Connection is read as tokens: Close, CLOSE and close in a list close the connection after the answer", arguments: [false, true])
    func connectionTokens(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            for value in ["Close", "CLOSE", "close, keep-alive", "keep-alive, close", "te, Close"] {
                // `responses: nil` reads until the server closes; a connection left open would hang to the idle timeout.
                let session = try await RawHTTP.session(port: port, sends: [(0, Self.sign("Connection: \(value)\r\n"))], responses: nil)
                #expect(Self.statuses(session.text) == ["200"], "\(value)")
                #expect(session.text.lowercased().contains("connection: close"), "\(value)")
                let closed = try #require(session.closedSinceLastSend)
                #expect(closed < 4, "\(value): closed after the answer, not by the idle timeout")
            }
        }
    }

    @Test("a transfer coding other than chunked is 501 and the connection closes", arguments: [false, true])
    func unknownTransferCoding(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let chunk = String(Self.body.utf8.count, radix: 16)
            let request =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, \
                chunked\r\n\r\n\(chunk)\r\n\(Self.body)\r\n0\r\n\r\n
                """
            let answer = try await RawHTTP.exchange(port: port, send: request + Self.sign(), responses: nil)
            #expect(Self.statuses(answer) == ["501"])
            #expect(answer.contains("unsupported_transfer_coding"))
            // Plain chunked is read as usual.
            let plain =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: \
                close\r\n\r\n\(chunk)\r\n\(Self.body)\r\n0\r\n\r\n
                """
            #expect(Self.statuses(try await RawHTTP.exchange(port: port, send: plain, responses: nil)) == ["200"])
        }
    }

    @Test(
        "a request NIO cannot parse is 400 malformed_request in the API's error shape, after the answer to the one before it",
        arguments: [false, true]
    )
    func brokenFraming(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let broken = [
                "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}",
                "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n",
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Folded: a\r\n b\r\n\r\n",
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: \
                chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n
                """,
            ]
            for request in broken {
                let answer = try await RawHTTP.exchange(port: port, send: request, responses: nil)
                #expect(Self.statuses(answer) == ["400"], "\(request)")
                #expect(answer.contains(#"{"error":{"code":"malformed_request""#), "\(answer)")
                #expect(answer.lowercased().contains("content-type: application/json"))
            }
            // A good request first, pipelined: it is answered, then the broken one.
            let answer = try await RawHTTP.exchange(port: port, send: Self.sign() + broken[0], responses: nil)
            #expect(Self.statuses(answer) == ["200", "400"], "\(answer)")
        }
    }

    @Test("HEAD is GET without a body, errors included, and the connection serves the next request", arguments: [false, true])
    func head(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let requests = ["HEAD /healthz", "HEAD /nowhere", "HEAD /v1/offers/sign", "GET /healthz"].map {
                "\($0) HTTP/1.1\r\nHost: localhost\r\n\r\n"
            }
            let answer = try await RawHTTP.exchange(port: port, send: requests.joined() + Self.sign("Connection: close\r\n"), responses: nil)
            #expect(Self.statuses(answer) == ["200", "404", "405", "200", "200"], "\(answer)")
            // Only the two GET-like answers with bodies: the health check and the signature.
            #expect(answer.components(separatedBy: #"{"status":"ok"}"#).count == 2, "\(answer)")
            #expect(!answer.contains("not_found") && !answer.contains("method_not_allowed"), "\(answer)")
            #expect(answer.contains("Allow: POST"))
        }
    }

    @Test("CONNECT is refused and the connection closed; an Upgrade request is answered and the connection closed", arguments: [false, true])
    func connectAndUpgrade(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let connect = try await RawHTTP.session(
                port: port,
                sends: [(0, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")],
                responses: nil
            )
            #expect(Self.statuses(connect.text) == ["405"])
            #expect(try #require(connect.closedSinceLastSend) < 4)
            let upgrade = try await RawHTTP.session(
                port: port,
                sends: [(0, Self.sign("Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"))],
                responses: nil
            )
            #expect(Self.statuses(upgrade.text) == ["200"], "answered as a plain request")
            #expect(try #require(upgrade.closedSinceLastSend) < 4, "closed after the answer, not left hanging")
        }
    }

    @Test("Expect: 100-continue gets 100 Continue before the body is sent", arguments: [false, true])
    func expectContinue(signing: Bool) async throws {
        try await Self.application(try TestService(), signing: signing).test(.live) { client in
            let port = try #require(client.port)
            let head =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: \
                \(Self.body.utf8.count)\r\n\r\n
                """
            // Only the head: the 100 arrives while the body is held back (the request timeout then closes it).
            let waiting = try await RawHTTP.session(port: port, sends: [(0, head)], responses: nil)
            #expect(waiting.text.hasPrefix("HTTP/1.1 100 Continue"), "\(waiting.text.prefix(40))")
            // Then the body: 100, then the answer.
            let full = try await RawHTTP.session(
                port: port,
                sends: [(0, head), (0.2, Self.body + Self.sign("Connection: close\r\n"))],
                responses: nil
            )
            #expect(Self.statuses(full.text) == ["100", "200", "200"])
        }
    }

    @Test("incomplete bodies over the budget: 503 with Retry-After and close, and the budget is given back", arguments: [false, true])
    func partialBodyBudget(signing: Bool) async throws {
        let limits = ConnectionLimits(idleTimeout: .seconds(8), requestTimeout: .seconds(3), partialBodyBudget: 150)
        try await Self.application(try TestService(), signing: signing, limits: limits).test(.live) { client in
            let port = try #require(client.port)
            let head = "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"
            // One connection holds 100 bytes of an incomplete body; another sends 100 more: over 150.
            async let holder = RawHTTP.session(port: port, sends: [(0, head + String(repeating: " ", count: 100))], responses: nil)
            // Time for the holder's bytes to arrive on a loaded machine, well inside the 3 s request timeout.
            try await Task.sleep(for: .seconds(1))
            let refused = try await RawHTTP.session(port: port, sends: [(0, head + String(repeating: " ", count: 100))], responses: nil)
            #expect(Self.statuses(refused.text) == ["503"])
            #expect(refused.text.lowercased().contains("retry-after: 1"))
            #expect(refused.text.contains("server_busy"))
            _ = try await holder  // closed by the request timeout, its bytes given back
            // Given back when the server has closed its side, which the client may see a moment before: on a loaded
            // machine a request sent at once can still meet the budget in use, so it is asked again for up to 3 s.
            var after = ""
            for _ in 0..<30 {
                after = try await RawHTTP.exchange(port: port, send: Self.sign("Connection: close\r\n"), responses: nil)
                if Self.statuses(after) == ["200"] { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(Self.statuses(after) == ["200"], "the budget is free again")
        }
    }
}
