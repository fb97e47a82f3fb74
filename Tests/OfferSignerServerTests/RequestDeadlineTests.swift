import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTP1
import NIOHTTPTypes
import OfferApplication
import Testing

@testable import OfferSignerServer

/// ``RequestDeadline``, the one request deadline: as a value on a ``ManualClock``, and run by both paths — the
/// router's ``RequestDeadlineHandler`` and the event-loop path's ``EventLoopSigningHandler`` — on the loop's clock.
@Suite struct RequestDeadlineTests {
    let clock = ManualClock()

    /// `#expect` of a value computed by a mutating call (the macro cannot take one).
    func check<T: Equatable>(_ value: T, _ expected: T, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(value == expected, comment, sourceLocation: sourceLocation)
    }

    @Test("armed once, the timeout after the read that left the request incomplete; closes only a request still incomplete")
    func rule() {
        var deadline = RequestDeadline(timeout: .seconds(10), clock: clock)
        check(deadline.readComplete(), .doNothing, "no request: nothing to arm")
        deadline.requestStarted()
        clock.advance(by: .seconds(2))
        check(deadline.readComplete(), .arm(deadline: ManualClock.at(.seconds(12))))
        check(deadline.readComplete(), .doNothing, "armed once")
        check(deadline.timerFired(), .close)
        check(deadline.timerFired(), .doNothing, "closed once")

        deadline.requestStarted()
        let endedUnarmed = deadline.requestEnded()
        #expect(!endedUnarmed, "read in full within its read: no timer to cancel")
        check(deadline.readComplete(), .doNothing, "and none armed after it")

        deadline.requestStarted()
        check(deadline.readComplete(), .arm(deadline: ManualClock.at(.seconds(12))))
        let endedArmed = deadline.requestEnded()
        #expect(endedArmed, "its end cancels the armed timer")
        check(deadline.timerFired(), .doNothing, "a timer firing after the end (a race with its cancel) closes nothing")

        deadline.requestStarted()
        _ = deadline.readComplete()
        deadline.closed()
        check(deadline.timerFired(), .doNothing, "the connection gone: nothing to close")
    }

    /// The two front ends of a request: the router's deadline handler (after the conversion to HTTP types), and the
    /// event-loop signing path's handler (before it), each alone in an embedded channel.
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        case router
        case eventLoop

        var testDescription: String { rawValue }
    }

    /// What a client does, at an instant: a head, a body part, an end, in reads that end (`readComplete`) when told.
    enum Step {
        case head, body, end, readComplete
    }

    /// Runs `steps` (at their milliseconds) on `path` with a one-second request timeout, moving the loop's clock a
    /// millisecond at a time up to three seconds.
    /// - Returns: the millisecond the connection closed at; `nil`: still open.
    private func closedAt(_ path: Path, _ steps: [(Int, Step)]) async throws -> Int? {
        let channel = EmbeddedChannel()
        let test = try TestService()
        switch path {
        case .router:
            try channel.pipeline.syncOperations.addHandler(RequestDeadlineHandler(timeout: .seconds(1)))
        case .eventLoop:
            let signing = EventLoopSigning(signing: Signing(pipeline: test.service), authenticator: nil, limits: RateLimits(.none), serverName: nil)
            try channel.pipeline.syncOperations.addHandler(
                EventLoopSigningHandler(signing: signing, requestTimeout: .seconds(1), eventLoop: channel.eventLoop, logger: Logger(label: "test"))
            )
        }
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        defer { _ = try? channel.finish() }
        for millisecond in 0...3000 {
            for (at, step) in steps where at == millisecond {
                switch (path, step) {
                case (_, .readComplete): channel.pipeline.fireChannelReadComplete()
                case (.router, .head):
                    channel.pipeline.fireChannelRead(
                        HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/offers/sign"))
                    )
                case (.router, .body): channel.pipeline.fireChannelRead(HTTPRequestPart.body(ByteBuffer(string: " ")))
                case (.router, .end): channel.pipeline.fireChannelRead(HTTPRequestPart.end(nil))
                case (.eventLoop, .head): channel.pipeline.fireChannelRead(HTTPServerRequestPart.head(EventLoopConnectionTests.signHead))
                case (.eventLoop, .body): channel.pipeline.fireChannelRead(HTTPServerRequestPart.body(ByteBuffer(string: " ")))
                case (.eventLoop, .end): channel.pipeline.fireChannelRead(HTTPServerRequestPart.end(nil))
                }
            }
            if !channel.isActive { return millisecond }
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        }
        return channel.isActive ? nil : 3001
    }

    @Test(
        "the router and the event-loop path run the same rule: each client closed at the same instant, or neither",
        arguments: RequestDeadlineTests.clients
    )
    func samePathsSameRule(steps: [(Int, Step)], expected: Int?) async throws {
        let router = try await closedAt(.router, steps)
        let eventLoop = try await closedAt(.eventLoop, steps)
        #expect(router == eventLoop)
        #expect(router == expected)
    }

    /// Clients, as the steps they take (at their milliseconds), and the millisecond the rule closes them at (`nil`:
    /// never).
    static let clients: [([(Int, Step)], Int?)] = {
        // A body trickling a byte every 100 ms: the timeout after the head's read.
        var trickle: [(Int, Step)] = [(0, .head), (0, .readComplete)]
        for tenth in 1...12 { trickle += [(tenth * 100, .body), (tenth * 100, .readComplete)] }
        let slowRead: [(Int, Step)] = [(0, .head), (300, .readComplete)]
        let inTime: [(Int, Step)] = [(0, .head), (0, .readComplete), (900, .body), (900, .end), (900, .readComplete)]
        let oneRead: [(Int, Step)] = [(0, .head), (0, .body), (0, .end), (0, .readComplete)]
        return [
            (trickle, 1000),
            // The head's read ends 300 ms after the head (a slow read): the timeout from the read's end.
            (slowRead, 1300),
            // The body completes within the timeout: never closed.
            (inTime, nil),
            // A request read in full within one read, then nothing: no deadline (the idle timeout's job).
            (oneRead, nil),
        ]
    }()
}
