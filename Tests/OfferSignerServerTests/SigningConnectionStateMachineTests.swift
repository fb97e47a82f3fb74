import NIOCore
import NIOHTTP1
import Testing

@testable import OfferSignerServer

/// ``SigningConnectionStateMachine`` without a socket or a channel: every ordering the attack campaign exercised
/// on the event-loop signing path, as events in and actions out.
@Suite struct SigningConnectionStateMachineTests {
    static let allocator = ByteBufferAllocator()
    static let ours = EventLoopSigning.Head(authorization: nil, requestID: nil, keepAlive: true)
    static let oursClosing = EventLoopSigning.Head(authorization: nil, requestID: nil, keepAlive: false)
    static let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/offers/sign")

    static func machine(limit: Int = 64) -> SigningConnectionStateMachine {
        SigningConnectionStateMachine(maximumBodySize: limit)
    }

    /// `#expect` of a value computed by a mutating call (the macro cannot take one).
    func check(_ condition: Bool, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(condition, comment, sourceLocation: sourceLocation)
    }

    static func isIdle(_ machine: SigningConnectionStateMachine) -> Bool {
        if case .idle = machine.state { true } else { false }
    }

    @Test("a request of ours: collected, decided, answered, and the connection reads on")
    func oursAnswered() throws {
        var machine = Self.machine()
        check(machine.acceptsRequest)
        check(machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator) == .collect)
        guard case .none = machine.bodyReceived(ByteBuffer(string: "{\"a\":")) else {
            Issue.record("body not kept")
            return
        }
        guard case .none = machine.bodyReceived(ByteBuffer(string: "1}")) else {
            Issue.record("body not kept")
            return
        }
        guard case .decide(let request, cancelDeadline: false) = machine.endReceived() else {
            Issue.record("not decided")
            return
        }
        #expect(String(buffer: request.body) == "{\"a\":1}")
        check(!machine.acceptsRequest)
        machine.answering()
        guard case .write(let release) = machine.answerReady() else {
            Issue.record("not written")
            return
        }
        #expect(release.isEmpty)
        #expect(Self.isIdle(machine))
    }

    @Test("the router's request passes through part by part")
    func routersRequest() {
        var machine = Self.machine()
        check(machine.headReceived(Self.head, taken: nil, now: .now, allocator: Self.allocator) == .forward)
        guard case .forward = machine.bodyReceived(ByteBuffer(string: "x")) else {
            Issue.record("body not forwarded")
            return
        }
        guard case .forward(cancelDeadline: false) = machine.endReceived() else {
            Issue.record("end not forwarded")
            return
        }
        #expect(Self.isIdle(machine))
        check(!machine.readComplete(), "no deadline of ours for the router's request")
    }

    @Test("a decision that hands the request over leaves the connection to the router's answer")
    func decidedHandOver() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        guard case .decide = machine.endReceived() else {
            Issue.record("not decided")
            return
        }
        machine.handedOver()
        #expect(Self.isIdle(machine))
        check(machine.acceptsRequest)
    }

    @Test("a body over the limit is handed over with what was read, and its deadline ends with its end")
    func oversizedBody() {
        var machine = Self.machine(limit: 8)
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        _ = machine.bodyReceived(ByteBuffer(string: "12345"))
        check(machine.readComplete(), "the read ended with the body incomplete: arm the deadline")
        guard case .handOver(let head, let body) = machine.bodyReceived(ByteBuffer(string: "6789")) else {
            Issue.record("not handed over")
            return
        }
        #expect(head.uri == "/v1/offers/sign")
        #expect(String(buffer: body) == "12345")
        guard case .forward = machine.bodyReceived(ByteBuffer(string: "more")) else {
            Issue.record("rest not forwarded")
            return
        }
        guard case .forward(cancelDeadline: true) = machine.endReceived() else {
            Issue.record("deadline not cancelled")
            return
        }
        #expect(Self.isIdle(machine))
    }

    @Test("the request deadline is armed once per request, only while its body is incomplete, and closes only then")
    func deadline() {
        var machine = Self.machine()
        check(!machine.readComplete(), "idle: nothing to arm")
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        check(machine.readComplete())
        check(!machine.readComplete(), "armed once")
        check(machine.deadlinePassed(), "passed while collecting: close")
        check(!machine.acceptsRequest)
        guard case .drop = machine.bodyReceived(ByteBuffer(string: "late")) else {
            Issue.record("read after close")
            return
        }

        var answered = Self.machine()
        _ = answered.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        check(answered.readComplete())
        guard case .decide(_, cancelDeadline: true) = answered.endReceived() else {
            Issue.record("deadline kept")
            return
        }
        check(!answered.deadlinePassed(), "a deadline firing after the end (a race with its cancel) closes nothing")
    }

    @Test("events while an answer is pending are held and released after it, in order; while reading they pass")
    func heldEvents() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        guard case .forward = machine.eventReceived("half-close while reading") else {
            Issue.record("held while reading")
            return
        }
        _ = machine.endReceived()
        guard case .hold = machine.eventReceived("first") else {
            Issue.record("not held while deciding")
            return
        }
        machine.answering()
        guard case .hold = machine.eventReceived("second") else {
            Issue.record("not held while answering")
            return
        }
        guard case .write(let release) = machine.answerReady() else {
            Issue.record("not written")
            return
        }
        #expect(release.compactMap { $0 as? String } == ["first", "second"])
        guard case .forward = machine.eventReceived("after") else {
            Issue.record("held after the answer")
            return
        }
    }

    @Test("Connection: close: the answer closes the connection; nothing held is released and nothing more is read")
    func closeAfterAnswer() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head, taken: Self.oursClosing, now: .now, allocator: Self.allocator)
        _ = machine.endReceived()
        machine.answering()
        _ = machine.eventReceived("half-close")
        guard case .writeAndClose = machine.answerReady() else {
            Issue.record("not closed")
            return
        }
        check(machine.held.isEmpty)
        check(machine.headReceived(Self.head, taken: nil, now: .now, allocator: Self.allocator) == .drop)
        guard case .drop = machine.endReceived() else {
            Issue.record("read after close")
            return
        }
    }

    @Test("the connection gone before the commit completed: the answer is dropped")
    func goneBeforeTheAnswer() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        _ = machine.endReceived()
        machine.answering()
        machine.closed()
        guard case .drop = machine.answerReady() else {
            Issue.record("answer written on a closed connection")
            return
        }
    }

    @Test("a head while not between requests (impossible behind NIO's pipelining handler) goes to the router")
    func headOutOfTurn() {
        var machine = Self.machine()
        _ = machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator)
        _ = machine.endReceived()
        machine.answering()
        check(!machine.acceptsRequest)
        check(machine.headReceived(Self.head, taken: Self.ours, now: .now, allocator: Self.allocator) == .forward)
    }

    @Test("mixed pipelined requests, as NIO delivers them one after another: ours, the router's, ours, oversized")
    func mixedSequence() {
        var machine = Self.machine(limit: 16)
        var log: [String] = []
        for (index, taken) in [Self.ours, nil, Self.ours, Self.ours].enumerated() {
            check(machine.acceptsRequest, "request \(index)")
            let action = machine.headReceived(Self.head, taken: taken, now: .now, allocator: Self.allocator)
            log.append("\(index) head \(action)")
            switch machine.bodyReceived(ByteBuffer(string: index == 3 ? String(repeating: "x", count: 20) : "{}")) {
            case .none: log.append("\(index) body kept")
            case .forward: log.append("\(index) body forwarded")
            case .handOver: log.append("\(index) handed over")
            case .drop: log.append("\(index) body dropped")
            }
            switch machine.endReceived() {
            case .decide:
                machine.answering()
                if case .write = machine.answerReady() { log.append("\(index) answered") }
            case .forward: log.append("\(index) end forwarded")
            case .drop: log.append("\(index) end dropped")
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
