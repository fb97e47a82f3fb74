import NIOCore
import NIOHTTP1
import Testing

@testable import OfferSignerServer

/// ``SigningConnectionStateMachine`` without a socket, a channel or real time (a ``ManualClock``): every ordering the
/// attack campaign exercised on the event-loop signing path, as events in and actions out.
@Suite struct SigningConnectionStateMachineTests {
    typealias Machine = SigningConnectionStateMachine<ManualClock>
    static let allocator = ByteBufferAllocator()
    static let ours = EventLoopSigning.Head(authorization: nil, requestID: nil, keepAlive: true)
    static let oursClosing = EventLoopSigning.Head(authorization: nil, requestID: nil, keepAlive: false)
    static let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/offers/sign")

    let clock = ManualClock()

    func machine(limit: Int = 64) -> Machine {
        Machine(maximumBodySize: limit, requestTimeout: .seconds(10), clock: clock)
    }

    /// `#expect` of a value computed by a mutating call (the macro cannot take one).
    func check<T: Equatable>(_ value: T, _ expected: T, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(value == expected, comment, sourceLocation: sourceLocation)
    }

    static func isIdle(_ machine: Machine) -> Bool {
        if case .idle = machine.state { true } else { false }
    }

    static func isClosed(_ machine: Machine) -> Bool {
        if case .closed = machine.state { true } else { false }
    }

    /// A request of ours read in full and decided, the answer pending.
    func answering(_ head: EventLoopSigning.Head = Self.ours) -> Machine {
        var machine = machine()
        _ = machine.headReceived(Self.head, taken: head, allocator: Self.allocator)
        _ = machine.endReceived()
        _ = machine.answering()
        return machine
    }

    @Test("a request of ours: collected, decided, answered, and the connection reads on")
    func oursAnswered() throws {
        var machine = machine()
        #expect(machine.acceptsRequest)
        clock.advance(by: .seconds(3))
        check(machine.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator), .collect)
        check(machine.bodyReceived(ByteBuffer(string: "{\"a\":")), .none)
        check(machine.bodyReceived(ByteBuffer(string: "1}")), .none)
        let request = Machine.Request(head: Self.head, taken: Self.ours, body: ByteBuffer(string: "{\"a\":1}"), start: ManualClock.at(.seconds(3)))
        check(machine.endReceived(), .decide(request, cancelDeadline: false), "decided, with the start on the injected clock")
        #expect(!machine.acceptsRequest)
        check(machine.answering(), .proceed)
        check(machine.answerReady(), .write(release: []))
        #expect(Self.isIdle(machine))
    }

    @Test("the router's request passes through part by part")
    func routersRequest() {
        var machine = machine()
        check(machine.headReceived(Self.head, taken: nil, allocator: Self.allocator), .forward)
        check(machine.bodyReceived(ByteBuffer(string: "x")), .forward)
        check(machine.endReceived(), .forward(cancelDeadline: false))
        #expect(Self.isIdle(machine))
        check(machine.readComplete(), .doNothing, "no deadline of ours for the router's request")
    }

    @Test("a decision that hands the request over leaves the connection to the router's answer")
    func decidedHandOver() {
        var machine = machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator)
        guard case .decide = machine.endReceived() else {
            Issue.record("not decided")
            return
        }
        check(machine.handedOver(), .proceed)
        #expect(Self.isIdle(machine))
        #expect(machine.acceptsRequest)
    }

    @Test("a body over the limit is handed over with what was read, and its deadline ends with its end")
    func oversizedBody() {
        var machine = machine(limit: 8)
        _ = machine.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator)
        _ = machine.bodyReceived(ByteBuffer(string: "12345"))
        check(machine.readComplete(), .arm(deadline: ManualClock.at(.seconds(10))), "the body incomplete: arm the deadline")
        check(machine.bodyReceived(ByteBuffer(string: "6789")), .handOver(Self.head, ByteBuffer(string: "12345")))
        check(machine.bodyReceived(ByteBuffer(string: "more")), .forward)
        check(machine.endReceived(), .forward(cancelDeadline: true))
        #expect(Self.isIdle(machine))
    }

    @Test("the request deadline: armed once per request, the request timeout after the read's end; closes only then")
    func deadline() {
        var machine = machine()
        check(machine.readComplete(), .doNothing, "idle: nothing to arm")
        _ = machine.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator)
        clock.advance(by: .seconds(2))
        check(machine.readComplete(), .arm(deadline: ManualClock.at(.seconds(12))))
        check(machine.readComplete(), .doNothing, "armed once")
        clock.advance(by: .seconds(10))
        check(machine.deadlinePassed(), .close, "passed while collecting: close")
        #expect(Self.isClosed(machine))
        #expect(!machine.acceptsRequest)
        check(machine.bodyReceived(ByteBuffer(string: "late")), .drop)
        check(machine.endReceived(), .drop)

        var answered = self.machine()
        _ = answered.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator)
        check(answered.readComplete(), .arm(deadline: ManualClock.at(.seconds(22))))
        guard case .decide(_, cancelDeadline: true) = answered.endReceived() else {
            Issue.record("deadline kept")
            return
        }
        clock.advance(by: .seconds(60))
        check(answered.deadlinePassed(), .doNothing, "a deadline firing after the end (a race with its cancel) closes nothing")
    }

    @Test("the half-close while an answer is pending is held, typed, and released after it; while reading it passes")
    func heldEvents() {
        var machine = machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator)
        check(machine.eventReceived(.halfClose), .forward, "while reading")
        _ = machine.endReceived()
        check(machine.eventReceived(.halfClose), .hold, "held while deciding")
        _ = machine.answering()
        #expect(machine.held == [.halfClose])
        check(machine.answerReady(), .write(release: [.halfClose]))
        #expect(machine.held.isEmpty)
        check(machine.eventReceived(.halfClose), .forward, "after the answer")

        var pending = answering()
        check(pending.eventReceived(.halfClose), .hold, "held while answering")
        check(pending.answerReady(), .write(release: [.halfClose]))
    }

    @Test("Connection: close: the answer closes the connection; nothing held is released and nothing more is read")
    func closeAfterAnswer() {
        var machine = answering(Self.oursClosing)
        _ = machine.eventReceived(.halfClose)
        check(machine.answerReady(), .writeAndClose)
        #expect(machine.held.isEmpty)
        check(machine.headReceived(Self.head, taken: nil, allocator: Self.allocator), .drop)
        check(machine.endReceived(), .drop)
    }

    @Test("the connection gone before the commit completed: the answer is dropped")
    func goneBeforeTheAnswer() {
        var machine = answering()
        machine.closed()
        check(machine.answerReady(), .drop)
    }

    @Test("impossible transitions (behind NIO's pipelining handler) fail loudly and close, never pass silently")
    func impossibleTransitions() {
        var pending = answering()
        #expect(!pending.acceptsRequest)
        guard case .preconditionFailed = pending.headReceived(Self.head, taken: Self.ours, allocator: Self.allocator) else {
            Issue.record("a second head while answering passed")
            return
        }
        #expect(Self.isClosed(pending))
        check(pending.answerReady(), .drop, "closed by the failure: nothing more is answered")

        var idle = machine()
        guard case .preconditionFailed = idle.bodyReceived(ByteBuffer(string: "x")) else {
            Issue.record("a body with no request passed")
            return
        }
        var idleEnd = machine()
        guard case .preconditionFailed = idleEnd.endReceived() else {
            Issue.record("an end with no request passed")
            return
        }
        var notDeciding = machine()
        guard case .preconditionFailed = notDeciding.answering() else {
            Issue.record("an answer with nothing decided passed")
            return
        }
        var noRequest = machine()
        guard case .preconditionFailed = noRequest.handedOver() else {
            Issue.record("a hand-over with nothing decided passed")
            return
        }
        var unasked = machine()
        guard case .preconditionFailed = unasked.answerReady() else {
            Issue.record("an answer nobody waits for passed")
            return
        }
        #expect([idle, idleEnd, notDeciding, noRequest, unasked].allSatisfy(Self.isClosed))
    }

    @Test("mixed pipelined requests, as NIO delivers them one after another: ours, the router's, ours, oversized")
    func mixedSequence() {
        var machine = machine(limit: 16)
        var log: [String] = []
        for (index, taken) in [Self.ours, nil, Self.ours, Self.ours].enumerated() {
            #expect(machine.acceptsRequest, "request \(index)")
            let action = machine.headReceived(Self.head, taken: taken, allocator: Self.allocator)
            log.append("\(index) head \(action)")
            switch machine.bodyReceived(ByteBuffer(string: index == 3 ? String(repeating: "x", count: 20) : "{}")) {
            case .none: log.append("\(index) body kept")
            case .forward: log.append("\(index) body forwarded")
            case .handOver: log.append("\(index) handed over")
            case .drop: log.append("\(index) body dropped")
            case .preconditionFailed: log.append("\(index) body failed")
            }
            switch machine.endReceived() {
            case .decide:
                _ = machine.answering()
                if case .write = machine.answerReady() { log.append("\(index) answered") }
            case .forward: log.append("\(index) end forwarded")
            case .drop: log.append("\(index) end dropped")
            case .preconditionFailed: log.append("\(index) end failed")
            }
        }
        #expect(
            log == [
                "0 head collect", "0 body kept", "0 answered",
                "1 head forward", "1 body forwarded", "1 end forwarded",
                "2 head collect", "2 body kept", "2 answered",
                "3 head collect", "3 handed over", "3 end forwarded",
            ]
        )
    }
}
