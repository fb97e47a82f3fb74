import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import OfferApplication
import Testing

@testable import OfferSignerServer

/// What the handlers after the conversion to HTTP types do for the router's requests, done for the event-loop
/// signing path's own (it sits before them): the request deadline, the idle timeout, and graceful shutdown — on
/// live sockets, and in an embedded channel with NIO's pipelining handler in front, as `serve` builds it.
@Suite struct EventLoopConnectionTests {
    static let body = #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#
    static let sign =
        "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"

    /// The live application with short limits (one second each unless given).
    private func application(
        _ test: TestService,
        idleTimeout: Duration = .seconds(1),
        requestTimeout: Duration = .seconds(1)
    ) -> Application<RouterResponder<OfferSignerRequestContext>> {
        makeApplication(
            router: buildRouter(useCases: OfferSignerUseCases(pipeline: test.service, keyManager: nil)),
            signing: EventLoopSigning(signing: Signing(pipeline: test.service), authenticator: nil, limits: RateLimits(.none), serverName: nil),
            limits: ConnectionLimits(idleTimeout: idleTimeout, requestTimeout: requestTimeout),
            logger: Logger(label: "test")
        )
    }

    // The three tests below run the live pipeline on a socket, so they read the wall clock. What they assert does
    // not depend on how busy the machine is: a timer never fires early, so each close is measured from an instant
    // before the server could have started its timer (a lower bound that always holds), and which timer closed the
    // connection is told by setting every other one beyond the 10 s after which the client gives up (a close must
    // come from the timer under test, or the test fails). The exact instants are checked on the loop's own clock,
    // without sockets, in the tests after them.

    @Test("a sign request whose body stops arriving is dropped with its connection after the request timeout")
    func bodyDeadline() async throws {
        let test = try TestService()
        // The idle timeout beyond the test: only the request deadline can close the connection.
        try await application(test, idleTimeout: .seconds(60), requestTimeout: .seconds(1)).test(.live) { client in
            let port = try #require(client.port)
            let head =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                200\r\n\r\n{\"productIdentifier\"
                """
            // A byte every 0.3 s for 9 s: the body keeps arriving, and never completes.
            let sends = [(0.0, head)] + (0..<30).map { _ in (0.3, " ") }
            let session = try await RawHTTP.session(port: port, sends: sends, responses: nil)
            #expect(session.text.isEmpty)  // no answer: the request never completed
            #expect(session.closedWhileSending)  // dropped while the body still trickled
            let closed = try #require(session.closedSinceStart)
            #expect(closed >= 1)  // not before the request timeout, counted from the head
        }
    }

    /// Found in review: the deadline was armed only at the end of a read, and a request replayed after an answer
    /// (pipelined behind it) had no read of its own ending, so only the idle timeout closed it.
    @Test("a sign request pipelined behind another, whose body stops arriving, is dropped after the request timeout")
    func pipelinedBodyDeadline() async throws {
        let test = try TestService()
        // The idle timeout beyond the 10 s the client waits: without the request deadline, nothing closes it.
        try await application(test, idleTimeout: .seconds(60), requestTimeout: .seconds(1)).test(.live) { client in
            let port = try #require(client.port)
            let stalled =
                """
                POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \
                200\r\n\r\n{\"productIdentifier\"
                """
            let session = try await RawHTTP.session(port: port, sends: [(0.0, Self.sign + stalled)], responses: nil)
            #expect(session.text.hasPrefix("HTTP/1.1 200"))  // the first is answered
            #expect(session.text.components(separatedBy: "HTTP/1.1 ").count - 1 == 1)  // the stalled one is not
            let closed = try #require(session.closedSinceLastSend)  // closed, not left open until the client gave up
            #expect(closed >= 1)  // not before the request timeout
        }
    }

    @Test("a connection that keeps signing outlives the idle timeout; once idle it is closed after it")
    func idleTimeout() async throws {
        let test = try TestService()
        // The request timeout only runs while a body is incomplete, and every body here is complete: once the
        // signatures stop, only the idle timeout can close the connection before the client gives up.
        try await application(test, idleTimeout: .seconds(2)).test(.live) { client in
            let port = try #require(client.port)
            // Seven signatures 0.5 s apart: 3 s on a connection with a 2 s idle timeout.
            let sends = [(0.0, Self.sign)] + (0..<6).map { _ in (0.5, Self.sign) }
            let busy = try await RawHTTP.session(port: port, sends: sends, responses: nil)
            #expect(!busy.closedWhileSending)
            #expect(busy.text.components(separatedBy: "HTTP/1.1 200").count - 1 == 7)
            let closed = try #require(busy.closedSinceLastSend)  // closed, not left open until the client gave up
            #expect(closed >= 2)  // the idle timeout, counted from the last answer, which came after the last send
        }
    }

    @Test("on the loop's clock: a body that keeps trickling is dropped exactly one request timeout after its head")
    func bodyDeadlineOnTheLoopsClock() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = try await signingChannel(test, events, requestTimeout: .seconds(1))
        let loop = channel.embeddedEventLoop
        try channel.writeInbound(HTTPServerRequestPart.head(Self.signHead))
        for _ in 0..<9 {  // a byte every 100 ms
            loop.advanceTime(by: .milliseconds(100))
            try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: " ")))
        }
        loop.advanceTime(by: .milliseconds(99))
        #expect(channel.isActive)  // 999 ms after the head
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)  // 1 s after the head
        #expect(try channel.readOutbound(as: HTTPServerResponsePart.self) == nil)  // dropped, not answered
        #expect(events.seen.isEmpty)  // nor handed to the router
        _ = try? channel.finish()
    }

    /// The review finding above, without sockets: the stalled request arrives in the same read as the one before it
    /// and waits behind that one's answer, so no read of its own ends; its deadline runs from when it is taken up.
    @Test("on the loop's clock: a request pipelined behind an answer, its body stalled, is dropped one request timeout later")
    func pipelinedBodyDeadlineOnTheLoopsClock() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = try await signingChannel(test, events, requestTimeout: .seconds(1))
        let loop = channel.embeddedEventLoop
        for part: HTTPServerRequestPart in [
            .head(Self.signHead), .body(ByteBuffer(string: Self.body)), .end(nil),
            .head(Self.signHead), .body(ByteBuffer(string: "{\"productIdentifier\"")),
        ] {
            channel.pipeline.fireChannelRead(part)
        }
        channel.pipeline.fireChannelReadComplete()  // one read for both
        loop.run()  // the first is answered (no store: its commit completes at once), the second taken up
        guard case .head(let response) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(response.status == .ok)
        loop.advanceTime(by: .milliseconds(999))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(events.seen.isEmpty)  // neither was handed to the router
        _ = try? channel.finish()
    }

    /// Graceful shutdown on a connection whose sign request is being read: NIO's pipelining handler, in front of
    /// the path, lets the request finish, answers it with `Connection: close` and closes after the answer.
    @Test("graceful shutdown lets a sign request being read finish, answers it with Connection: close, then closes")
    func quiesceWaitsForTheRequest() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = try await signingChannel(test, events)
        try channel.writeInbound(HTTPServerRequestPart.head(Self.signHead))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(channel.isActive, "not closed under the request")
        try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: Self.body)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        channel.embeddedEventLoop.run()
        // Answered (no store: the commit completes at once), marked close, and the connection closed after it.
        guard case .head(let response) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(response.status == .ok)
        #expect(response.headers["connection"] == ["close"])
        #expect(!channel.isActive)
        #expect(events.seen.isEmpty, "nothing of the request reached the router")
    }

    @Test("an idle connection closes at once on graceful shutdown")
    func quiesceClosesAnIdleConnection() async throws {
        let channel = try await signingChannel(try TestService(), EventRecorder())
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    /// Requests pipelined behind a pending answer reach the router only after it, in order (NIO's pipelining
    /// handler holds them); the half-close that follows them comes after them.
    @Test("requests pipelined behind a pending answer reach the router after it, then the half-close")
    func pipelinedRequestsFollowTheAnswer() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = try await signingChannel(test, events)
        try channel.writeInbound(HTTPServerRequestPart.head(Self.signHead))
        try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: Self.body)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))  // answered once the loop runs: pending now
        try channel.writeInbound(HTTPServerRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/healthz")))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(events.seen.isEmpty)
        channel.embeddedEventLoop.run()
        #expect(events.seen == ["head GET /healthz", "end", "inputClosed"])
        guard case .head(let response) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(response.status == .ok)
        _ = try? channel.finish()
    }

    @Test("while a sign request is read, the client's half-close passes at once")
    func halfClosePasses() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = try await signingChannel(test, events)
        try channel.writeInbound(HTTPServerRequestPart.head(Self.signHead))
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(events.seen == ["inputClosed"])
        _ = try? channel.finish()
    }

    @Test("keep-alive read as RFC 9110 says: Connection tokens in any case and in lists; HTTP/1.0 only with keep-alive")
    func keepAlive() {
        func head(_ version: HTTPVersion, _ connection: [String]) -> HTTPRequestHead {
            var head = HTTPRequestHead(version: version, method: .POST, uri: "/v1/offers/sign")
            for value in connection { head.headers.add(name: "Connection", value: value) }
            return head
        }
        #expect(EventLoopSigning.keepsAlive(head(.http1_1, [])))
        #expect(EventLoopSigning.keepsAlive(head(.http1_1, ["keep-alive"])))
        for closing in [["close"], ["Close"], ["CLOSE"], ["close, keep-alive"], ["te, close"], ["close", "close"]] {
            #expect(!EventLoopSigning.keepsAlive(head(.http1_1, closing)), "\(closing)")
        }
        #expect(!EventLoopSigning.keepsAlive(head(.http1_0, [])))
        #expect(EventLoopSigning.keepsAlive(head(.http1_0, ["keep-alive"])))
    }

    /// The head of a sign request (its body: ``body``).
    static var signHead: HTTPRequestHead {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/offers/sign")
        head.headers.add(name: "Content-Type", value: "application/json")
        return head
    }

    /// An embedded channel as `serve` builds one, without the codec: NIO's pipelining handler, the signing handler,
    /// and `events` after them (standing for the router).
    private func signingChannel(_ test: TestService, _ events: EventRecorder, requestTimeout: Duration = .seconds(10)) async throws -> EmbeddedChannel
    {
        let channel = EmbeddedChannel()
        let signing = EventLoopSigning(signing: Signing(pipeline: test.service), authenticator: nil, limits: RateLimits(.none), serverName: nil)
        try channel.pipeline.syncOperations.addHandler(HTTPServerPipelineHandler())
        try channel.pipeline.syncOperations.addHandler(
            EventLoopSigningHandler(signing: signing, requestTimeout: requestTimeout, eventLoop: channel.eventLoop, logger: Logger(label: "test"))
        )
        try channel.pipeline.syncOperations.addHandler(events)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return channel
    }

    /// What reaches the end of the pipeline, in order: request parts (as "head METHOD URI", "body", "end") and
    /// events ("quiesce", "inputClosed").
    final class EventRecorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        var seen: [String] = []
        var quiesced: Int { seen.filter { $0 == "quiesce" }.count }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): seen.append("head \(head.method.rawValue) \(head.uri)")
            case .body: seen.append("body")
            case .end: seen.append("end")
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { seen.append("quiesce") }
            if case ChannelEvent.inputClosed? = event as? ChannelEvent { seen.append("inputClosed") }
            context.fireUserInboundEventTriggered(event)
        }
    }
}
