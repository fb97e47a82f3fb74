import NIOCore
import NIOHTTP1

/// The per-connection logic of the event-loop signing path, as a value: events in (a request part read, a read
/// ended, a decision, an answer written, the deadline, an inbound event, the connection gone), one action out,
/// which ``EventLoopSigningHandler`` executes. No channel, no timer and no clock of its own, so every ordering is
/// tested without a socket (`SigningConnectionStateMachineTests`), the way NIO's and Hummingbird's connection
/// state machines are written.
///
/// HTTP/1 ordering is not its job: NIO's `HTTPServerPipelineHandler`, in front of it, delivers a request only
/// after the previous response has ended, stops reading meanwhile, keeps a parse error and the client's half-close
/// behind the pending response, and closes the connection on graceful shutdown once the response in flight has
/// ended. What is left here: which requests are ours, collecting their body, handing a request over to the router
/// as it came, the request deadline of a body being collected, keep-alive, and holding the events that must not
/// reach the router while an answer of ours is pending.
struct SigningConnectionStateMachine {
    /// A request of ours, read so far.
    struct Request {
        var head: HTTPRequestHead
        var taken: EventLoopSigning.Head
        var body: ByteBuffer
        var start: ContinuousClock.Instant
    }

    enum State {
        /// Between requests.
        case idle
        /// A request of ours, its body arriving; `deadlineArmed`: its request deadline is running.
        case collecting(Request, deadlineArmed: Bool)
        /// Its end read: the handler is deciding it.
        case deciding(keepAlive: Bool)
        /// The router's request: its parts pass on as they come. `deadlineArmed`: a request of ours handed over
        /// before its end (too large) keeps the deadline armed from its head until its end.
        case forwarding(deadlineArmed: Bool)
        /// Our answer is pending (its record committing).
        case answering(keepAlive: Bool)
        /// Answered with `Connection: close`, or the connection is gone: nothing more is read or answered.
        case closed
    }

    private(set) var state = State.idle
    /// Inbound events that arrived while an answer of ours was pending (the client's half-close): they must reach
    /// the router after the answer, never ahead of it (the router would close the connection under it).
    private(set) var held: [Any] = []
    let maximumBodySize: Int

    init(maximumBodySize: Int) {
        self.maximumBodySize = maximumBodySize
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
    }

    /// A request head; `taken`: what ``EventLoopSigning/takes(_:)`` said of it (asked only when ``acceptsRequest``).
    mutating func headReceived(
        _ head: HTTPRequestHead,
        taken: EventLoopSigning.Head?,
        now: ContinuousClock.Instant,
        allocator: ByteBufferAllocator
    ) -> HeadAction {
        switch state {
        case .idle:
            guard let taken else {
                state = .forwarding(deadlineArmed: false)
                return .forward
            }
            state = .collecting(Request(head: head, taken: taken, body: allocator.buffer(capacity: 512), start: now), deadlineArmed: false)
            return .collect
        case .closed:
            return .drop
        case .collecting, .deciding, .forwarding, .answering:
            // Not possible behind NIO's pipelining handler; the router answers whatever it is.
            return .forward
        }
    }

    enum BodyAction {
        /// Kept with the request.
        case none
        case forward
        /// Too large for this path: pass on the head and the body so far, then this part; the router answers it
        /// (413). A deadline already armed stays: the request's time counts from its head.
        case handOver(HTTPRequestHead, ByteBuffer)
        case drop
    }

    mutating func bodyReceived(_ chunk: ByteBuffer) -> BodyAction {
        switch state {
        case .collecting(var request, let armed):
            guard request.body.readableBytes + chunk.readableBytes <= maximumBodySize else {
                state = .forwarding(deadlineArmed: armed)
                return .handOver(request.head, request.body)
            }
            state = .idle  // no second reference to the buffer while it grows
            var chunk = chunk
            request.body.writeBuffer(&chunk)
            state = .collecting(request, deadlineArmed: armed)
            return .none
        case .closed:
            return .drop
        case .idle, .deciding, .forwarding, .answering:
            return .forward
        }
    }

    enum EndAction {
        /// Pass it on; `cancelDeadline`: the handed-over request's deadline ends with it.
        case forward(cancelDeadline: Bool)
        /// Ours, complete: decide it (``EventLoopSigning/outcome(head:body:remoteAddress:logger:)``), then report
        /// with ``handedOver()`` or ``answering()``. `cancelDeadline`: its deadline was armed.
        case decide(Request, cancelDeadline: Bool)
        case drop
    }

    mutating func endReceived() -> EndAction {
        switch state {
        case .collecting(let request, let armed):
            state = .deciding(keepAlive: request.taken.keepAlive)
            return .decide(request, cancelDeadline: armed)
        case .forwarding(let armed):
            state = .idle
            return .forward(cancelDeadline: armed)
        case .closed:
            return .drop
        case .idle, .deciding, .answering:
            return .forward(cancelDeadline: false)
        }
    }

    /// A read ended: a request of ours whose body is still incomplete gets its deadline, once.
    mutating func readComplete() -> Bool {
        guard case .collecting(let request, false) = state else { return false }
        state = .collecting(request, deadlineArmed: true)
        return true
    }

    // MARK: Deciding and answering

    /// The decision handed the request to the router: the handler passes on its head, body and end.
    mutating func handedOver() {
        guard case .deciding = state else { return }
        state = .idle
    }

    /// The decision answers the request here (refused, or signed and committing).
    mutating func answering() {
        guard case .deciding(let keepAlive) = state else { return }
        state = .answering(keepAlive: keepAlive)
    }

    enum AnswerAction {
        /// Write the answer and keep reading; then pass on `release` (events held meanwhile), in order.
        case write(release: [Any])
        /// Write the answer with `Connection: close` and close once it is written; nothing else is passed on.
        case writeAndClose
        /// The connection is gone: nothing to write.
        case drop
    }

    /// The answer is ready (the record committed, or a refusal).
    mutating func answerReady() -> AnswerAction {
        guard case .answering(let keepAlive) = state else { return .drop }
        guard keepAlive else {
            state = .closed
            held = []
            return .writeAndClose
        }
        state = .idle
        let release = held
        held = []
        return .write(release: release)
    }

    // MARK: Events

    enum EventAction {
        case forward
        /// Kept until the pending answer is written (``answerReady()`` releases it).
        case hold
    }

    mutating func eventReceived(_ event: Any) -> EventAction {
        switch state {
        case .deciding, .answering:
            held.append(event)
            return .hold
        case .idle, .collecting, .forwarding, .closed:
            return .forward
        }
    }

    /// The request deadline passed: close the connection.
    mutating func deadlinePassed() -> Bool {
        switch state {
        case .collecting(_, true), .forwarding(true):
            state = .closed
            return true
        default:
            return false
        }
    }

    /// The connection closed: nothing more is answered.
    mutating func closed() {
        state = .closed
        held = []
    }
}
