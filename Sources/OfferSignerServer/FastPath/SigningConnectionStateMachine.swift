import NIOCore
import NIOHTTP1

/// The per-connection logic of the event-loop signing path, as a value: events in (a request part read, a read
/// ended, a decision, an answer written, the deadline, an inbound event, the connection gone), one action out,
/// which ``EventLoopSigningHandler`` executes. No channel and no timer; its clock is injected (the event loop's in
/// the server, a clock a test moves by hand in `SigningConnectionStateMachineTests`), and the events it holds are
/// typed (``BufferedEvent``, as NIO's `HTTPServerPipelineHandler` types what it buffers: no `Any` is held), so every
/// ordering is tested without a socket, the way NIO's and Hummingbird's connection state machines are written.
///
/// A transition that cannot happen behind NIO's pipelining handler (a body or an end with no request, a second head
/// before the first is answered, an answer nobody is waiting for) is not ignored: the action is
/// `.preconditionFailed(reason)`, as NIO's `HTTPServerPipelineHandler` does, rather than a `preconditionFailure()`
/// here. The handler logs it, stops in a debug build (`assertionFailure`) and closes the connection; a release build
/// loses that one connection, not the process with every other connection's request in flight, and a test asserts
/// the action without crashing.
///
/// HTTP/1 ordering is not its job: NIO's `HTTPServerPipelineHandler`, in front of it, delivers a request only
/// after the previous response has ended, stops reading meanwhile, keeps a parse error and the client's half-close
/// behind the pending response, and closes the connection on graceful shutdown once the response in flight has
/// ended. What is left here: which requests are ours, collecting their body, handing a request over to the router
/// as it came, the request deadline of a body being collected (``RequestDeadline``, the router's rule too),
/// keep-alive, and holding the events that must not reach the router while an answer of ours is pending.
struct SigningConnectionStateMachine<C: Clock> where C.Duration == Duration {
    /// An inbound event held while an answer of ours is pending, and passed on after it. The handler holds the
    /// client's half-close only: any other user event passes on at once, as NIO's `HTTPServerPipelineHandler`
    /// passes on the events it does not buffer (the graceful-shutdown event never comes this far: that handler,
    /// in front, acts on it itself).
    enum BufferedEvent: Equatable {
        /// The client closed its side (`ChannelEvent.inputClosed`): the router would close the connection under
        /// our answer.
        case halfClose
    }

    /// A request of ours, read so far.
    struct Request: Equatable {
        var head: HTTPRequestHead
        var taken: EventLoopSigning.Head
        var body: ByteBuffer
        var start: C.Instant

        static func == (a: Request, b: Request) -> Bool {
            a.head == b.head && a.body == b.body && a.start == b.start && a.taken.authorization == b.taken.authorization
                && a.taken.requestID == b.taken.requestID && a.taken.keepAlive == b.taken.keepAlive
        }
    }

    enum State {
        /// Between requests.
        case idle
        /// A request of ours, its body arriving (its request deadline: ``deadline``).
        case collecting(Request)
        /// Its end read: the handler is deciding it.
        case deciding(keepAlive: Bool)
        /// The router's request: its parts pass on as they come. A request of ours handed over before its end (too
        /// large) keeps its request deadline (``deadline``) until its end; the router's own have theirs after the
        /// conversion to HTTP types (``RequestDeadlineHandler``).
        case forwarding
        /// Our answer is pending (its record committing).
        case answering(keepAlive: Bool)
        /// Answered with `Connection: close`, or the connection is gone: nothing more is read or answered.
        case closed
    }

    private(set) var state = State.idle
    /// Inbound events that arrived while an answer of ours was pending (the client's half-close): they must reach
    /// the router after the answer, never ahead of it (the router would close the connection under it).
    private(set) var held: [BufferedEvent] = []
    /// The request deadline of a request of ours: the rule of every request (``RequestDeadline``), on this clock.
    private(set) var deadline: RequestDeadline<C>
    let maximumBodySize: Int
    let clock: C

    init(maximumBodySize: Int, requestTimeout: Duration, clock: C) {
        self.maximumBodySize = maximumBodySize
        self.deadline = RequestDeadline(timeout: requestTimeout, clock: clock)
        self.clock = clock
    }

    /// Whether a request head may be ours: only between requests.
    var acceptsRequest: Bool {
        if case .idle = state { true } else { false }
    }

    // MARK: Reading

    enum HeadAction: Equatable {
        /// Ours: nothing to do until its body has arrived.
        case collect
        /// The router's: pass it on.
        case forward
        /// Nothing more is read on this connection.
        case drop
        /// A transition NIO's pipelining handler rules out: the handler stops (debug) or closes (release).
        case preconditionFailed(String)
    }

    /// A request head; `taken`: what ``EventLoopSigning/takes(_:)`` said of it (asked only when ``acceptsRequest``).
    mutating func headReceived(_ head: HTTPRequestHead, taken: EventLoopSigning.Head?, allocator: ByteBufferAllocator) -> HeadAction {
        switch state {
        case .idle:
            guard let taken else {
                state = .forwarding
                return .forward
            }
            let request = Request(head: head, taken: taken, body: allocator.buffer(capacity: 512), start: clock.now)
            state = .collecting(request)
            deadline.requestStarted()
            return .collect
        case .closed:
            return .drop
        case .collecting, .deciding, .forwarding, .answering:
            return fail(.preconditionFailed("a request head before the previous request was answered"))
        }
    }

    /// The impossible transition `action` reports: nothing more is read or answered here.
    private mutating func fail<Action>(_ action: Action) -> Action {
        closed()
        return action
    }

    enum BodyAction: Equatable {
        /// Kept with the request.
        case none
        case forward
        /// Too large for this path: pass on the head and the body so far, then this part; the router answers it
        /// (413). A deadline already armed stays: the request's time counts from its head.
        case handOver(HTTPRequestHead, ByteBuffer)
        case drop
        /// A body part with no request being read.
        case preconditionFailed(String)
    }

    mutating func bodyReceived(_ chunk: ByteBuffer) -> BodyAction {
        switch state {
        case .collecting(var request):
            guard request.body.readableBytes + chunk.readableBytes <= maximumBodySize else {
                state = .forwarding
                return .handOver(request.head, request.body)
            }
            state = .idle  // no second reference to the buffer while it grows
            var chunk = chunk
            request.body.writeBuffer(&chunk)
            state = .collecting(request)
            return .none
        case .forwarding:
            return .forward
        case .closed:
            return .drop
        case .idle, .deciding, .answering:
            return fail(.preconditionFailed("a body part with no request being read"))
        }
    }

    enum EndAction: Equatable {
        /// Pass it on; `cancelDeadline`: the handed-over request's deadline ends with it.
        case forward(cancelDeadline: Bool)
        /// Ours, complete: decide it (``EventLoopSigning/outcome(head:body:remoteAddress:logger:)``), then report
        /// with ``handedOver()`` or ``answering()``. `cancelDeadline`: its deadline was armed.
        case decide(Request, cancelDeadline: Bool)
        case drop
        /// A request's end with no request being read.
        case preconditionFailed(String)
    }

    mutating func endReceived() -> EndAction {
        switch state {
        case .collecting(let request):
            state = .deciding(keepAlive: request.taken.keepAlive)
            return .decide(request, cancelDeadline: deadline.requestEnded())
        case .forwarding:
            state = .idle
            return .forward(cancelDeadline: deadline.requestEnded())
        case .closed:
            return .drop
        case .idle, .deciding, .answering:
            return fail(.preconditionFailed("a request's end with no request being read"))
        }
    }

    /// A read ended: a request of ours whose body is still incomplete gets its deadline, once, the request timeout
    /// from now (``RequestDeadline/readComplete()``); ``deadlinePassed()`` says what then.
    mutating func readComplete() -> RequestDeadline<C>.TimerAction {
        deadline.readComplete()
    }

    // MARK: Deciding and answering

    enum DecisionAction: Equatable {
        /// Carry it out.
        case proceed
        /// No request was being decided.
        case preconditionFailed(String)
    }

    /// The decision handed the request to the router: the handler passes on its head, body and end.
    mutating func handedOver() -> DecisionAction {
        guard case .deciding = state else { return fail(.preconditionFailed("a hand-over with no request being decided")) }
        state = .idle
        return .proceed
    }

    /// The decision answers the request here (refused, or signed and committing).
    mutating func answering() -> DecisionAction {
        guard case .deciding(let keepAlive) = state else { return fail(.preconditionFailed("an answer with no request being decided")) }
        state = .answering(keepAlive: keepAlive)
        return .proceed
    }

    enum AnswerAction: Equatable {
        /// Write the answer and keep reading; then pass on `release` (events held meanwhile), in order.
        case write(release: [BufferedEvent])
        /// Write the answer with `Connection: close` and close once it is written; nothing else is passed on.
        case writeAndClose
        /// The connection is gone: nothing to write.
        case drop
        /// An answer with no request waiting for one.
        case preconditionFailed(String)
    }

    /// The answer is ready (the record committed, or a refusal).
    mutating func answerReady() -> AnswerAction {
        switch state {
        case .answering: break
        case .closed: return .drop
        case .idle, .collecting, .deciding, .forwarding: return fail(.preconditionFailed("an answer with no request waiting for one"))
        }
        guard case .answering(let keepAlive) = state else { return .drop }
        guard keepAlive else {
            closed()
            return .writeAndClose
        }
        state = .idle
        let release = held
        held = []
        return .write(release: release)
    }

    // MARK: Events

    enum EventAction: Equatable {
        case forward
        /// Kept until the pending answer is written (``answerReady()`` releases it).
        case hold
    }

    mutating func eventReceived(_ event: BufferedEvent) -> EventAction {
        switch state {
        case .deciding, .answering:
            held.append(event)
            return .hold
        case .idle, .collecting, .forwarding, .closed:
            return .forward
        }
    }

    /// The request deadline's timer fired: a request of ours not arrived in full closes the connection
    /// (``RequestDeadline/timerFired()``).
    mutating func deadlinePassed() -> RequestDeadline<C>.TimeoutAction {
        let action = deadline.timerFired()
        if case .close = action { closed() }
        return action
    }

    /// The connection closed: nothing more is answered.
    mutating func closed() {
        state = .closed
        held = []
        deadline.closed()
    }
}
