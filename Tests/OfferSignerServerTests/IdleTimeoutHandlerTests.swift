import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import OfferSignerServer

/// ``HTTP1IdleTimeoutHandler`` on an `EmbeddedEventLoop`, whose clock moves only when the test moves it: each
/// expectation is about a moment, not a window of wall-clock time.
@Suite struct IdleTimeoutHandlerTests {
    private static let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/offers/sign")

    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: HTTP1IdleTimeoutHandler(idleTimeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    private func isOpen(_ channel: EmbeddedChannel) -> Bool {
        channel.embeddedEventLoop.run()
        return channel.isActive
    }

    @Test("a connection that sends nothing is closed at the idle timeout, not a moment before")
    func silentConnection() throws {
        let channel = try channel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(10) - .nanoseconds(1))
        #expect(isOpen(channel))
        channel.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        #expect(!isOpen(channel))
    }

    @Test("each part read moves the timer on")
    func partsMoveTheTimer() throws {
        let channel = try channel()
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try channel.writeInbound(HTTPServerRequestPart.head(Self.head))
        channel.embeddedEventLoop.advanceTime(by: .seconds(8))
        try channel.writeInbound(HTTPServerRequestPart.body(ByteBuffer(string: "{")))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(isOpen(channel))  // 25 s after the start, 9 s after the last part: a body still arriving
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!isOpen(channel))  // 10 s without a part while the body is read: closed
    }

    @Test("a request read and not yet answered keeps its connection however long the answer takes; its end starts the timer")
    func answerPending() throws {
        let channel = try channel()
        try channel.writeInbound(HTTPServerRequestPart.head(Self.head))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(isOpen(channel))
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10) - .nanoseconds(1))
        #expect(isOpen(channel))
        channel.embeddedEventLoop.advanceTime(by: .nanoseconds(1))
        #expect(!isOpen(channel))
    }

    @Test("pipelined requests: the timer starts when the last of them is answered")
    func pipelined() throws {
        let channel = try channel()
        for _ in 0..<2 {
            try channel.writeInbound(HTTPServerRequestPart.head(Self.head))
            try channel.writeInbound(HTTPServerRequestPart.end(nil))
        }
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))  // the first answered
        channel.embeddedEventLoop.advanceTime(by: .seconds(30))
        #expect(isOpen(channel))  // the second is still owed an answer
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!isOpen(channel))
    }

    // MARK: The state machine on a clock the test moves (Hummingbird's `HTTPConnectionStateHandlerStateMachineTests`)

    @Test("the machine: silent from the start, closed at the timeout")
    func machineSilent() {
        let clock = ManualClock()
        var machine = IdleTimeoutStateMachine(idleTimeout: .seconds(30), clock: clock)
        #expect(machine.becameActive() == .schedule(deadline: ManualClock.at(.seconds(30))))
        #expect(machine.becameActive() == .doNothing, "active once")
        clock.advance(by: .seconds(30))
        #expect(machine.timerFired() == .close)
    }

    @Test("the machine: a part read moves the deadline on; a head alone does not keep the connection")
    func machinePartsMoveTheDeadline() {
        let clock = ManualClock()
        var machine = IdleTimeoutStateMachine(idleTimeout: .seconds(30), clock: clock)
        _ = machine.becameActive()
        clock.advance(by: .seconds(2))
        machine.read(.head)
        clock.advance(by: .seconds(28))
        #expect(machine.timerFired() == .reschedule(deadline: ManualClock.at(.seconds(32))))
        clock.advance(by: .seconds(1))
        machine.read(.body)
        clock.advance(by: .seconds(1))
        #expect(machine.timerFired() == .reschedule(deadline: ManualClock.at(.seconds(61))))
        clock.advance(by: .seconds(29))
        #expect(machine.timerFired() == .close, "a request whose head came and whose body stopped is idle")
    }

    @Test("the machine: a request read and not answered is never idle; its response's end starts the timeout")
    func machineAnswerPending() {
        let clock = ManualClock()
        var machine = IdleTimeoutStateMachine(idleTimeout: .seconds(30), clock: clock)
        _ = machine.becameActive()
        machine.read(.head)
        machine.read(.end)
        clock.advance(by: .seconds(600))
        #expect(machine.timerFired() == .doNothing)
        #expect(machine.wroteResponseEnd() == .schedule(deadline: ManualClock.at(.seconds(630))))
        clock.advance(by: .seconds(30))
        #expect(machine.timerFired() == .close)
    }

    @Test("the machine: pipelined requests keep it open until the last response; an inactive connection is left alone")
    func machinePipelinedAndInactive() {
        let clock = ManualClock()
        var machine = IdleTimeoutStateMachine(idleTimeout: .seconds(30), clock: clock)
        _ = machine.becameActive()
        for _ in 0..<2 {
            machine.read(.head)
            machine.read(.end)
        }
        #expect(machine.wroteResponseEnd() == .doNothing, "one response of two written")
        clock.advance(by: .seconds(100))
        #expect(machine.timerFired() == .doNothing)
        #expect(machine.wroteResponseEnd() == .schedule(deadline: ManualClock.at(.seconds(130))))
        machine.becameInactive()
        clock.advance(by: .seconds(30))
        #expect(machine.timerFired() == .doNothing)
        #expect(machine.wroteResponseEnd() == .doNothing)
    }
}
