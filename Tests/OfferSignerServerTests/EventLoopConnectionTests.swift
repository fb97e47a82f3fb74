import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
@testable import OfferSignerServer
import Testing

/// What the handlers after the conversion to HTTP types do for the router's requests, done for the event-loop
/// signing path's own (it sits before them): the request deadline, the idle timeout, and graceful shutdown.
@Suite struct EventLoopConnectionTests {
    static let body = #"{"productIdentifier":"com.example.monthly","offerIdentifier":"winback_50","applicationUsername":"user-1"}"#
    static let sign = "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"

    /// The live application with one-second limits.
    private func application(_ test: TestService) -> Application<RouterResponder<OfferSignerRequestContext>> {
        makeApplication(
            router: buildRouter(service: test.service),
            signing: EventLoopSigning(service: test.service, authenticator: nil, limits: RateLimits(.none), serverName: nil),
            limits: ConnectionLimits(idleTimeout: .seconds(1), requestTimeout: .seconds(1)),
            logger: Logger(label: "test"))
    }

    @Test("a sign request whose body stops arriving is dropped with its connection after the request timeout")
    func bodyDeadline() async throws {
        let test = try TestService()
        try await application(test).test(.live) { client in
            let port = try #require(client.port)
            let head = "POST /v1/offers/sign HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"productIdentifier\""
            // A byte every 0.3 s keeps the idle timeout (1 s) from closing it first: only the deadline can.
            let sends = [(0.0, head)] + (0..<12).map { _ in (0.3, " ") }
            let session = try await RawHTTP.session(port: port, sends: sends, responses: nil)
            #expect(session.text.isEmpty)  // no answer: the request never completed
            // Closed 1 s after the head, while the body still trickled (3.6 s in all).
            let closed = try #require(session.closedSinceStart)
            #expect(closed > 0.8 && closed < 2.5)
        }
    }

    @Test("a connection that keeps signing outlives the idle timeout; once idle it is closed after it")
    func idleTimeout() async throws {
        let test = try TestService()
        try await application(test).test(.live) { client in
            let port = try #require(client.port)
            // Six signatures 0.5 s apart: 3 s on a connection with a 1 s idle timeout.
            let sends = [(0.0, Self.sign)] + (0..<5).map { _ in (0.5, Self.sign) }
            let busy = try await RawHTTP.session(port: port, sends: sends, responses: nil)
            #expect(busy.text.components(separatedBy: "HTTP/1.1 200").count - 1 == 6)
            let closed = try #require(busy.closedSinceLastSend)
            #expect(closed > 0.8 && closed < 3)  // the idle timeout, counted from the last answer
        }
    }

    /// Graceful shutdown's quiesce event reaching the handler while a request of its own is being read would make
    /// Hummingbird's connection-state handler (which sees no request) close the connection under it: it waits.
    @Test("a quiesce event waits behind a sign request being read, and passes at once when none is")
    func quiesceWaitsForTheRequest() async throws {
        let test = try TestService()
        let events = EventRecorder()
        let channel = EmbeddedChannel()
        let signing = EventLoopSigning(service: test.service, authenticator: nil, limits: RateLimits(.none), serverName: nil)
        try channel.pipeline.syncOperations.addHandler(EventLoopSigningHandler(signing: signing, requestTimeout: .seconds(10), logger: Logger(label: "test")))
        try channel.pipeline.syncOperations.addHandler(events)
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()

        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/offers/sign")
        head.headers.add(name: "Content-Type", value: "application/json")
        try channel.writeInbound(HTTPServerRequestPart.head(head))
        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(events.quiesced == 0)
        try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: Self.body)))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        channel.embeddedEventLoop.run()
        // Answered (no store: the commit completes at once), then the event passed on.
        guard case .head(let response) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(response.status == .ok)
        #expect(events.quiesced == 1)

        channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(events.quiesced == 2)
        _ = try? channel.finish()
    }

    /// Counts the quiesce events that reach the end of the pipeline.
    final class EventRecorder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        var quiesced = 0

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is ChannelShouldQuiesceEvent { quiesced += 1 }
            context.fireUserInboundEventTriggered(event)
        }
    }
}
