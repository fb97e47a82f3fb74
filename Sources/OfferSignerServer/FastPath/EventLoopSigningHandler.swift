import HTTPTypes
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import OfferApplication
import OfferSigning
import OfferStore

/// The event-loop signing path in a connection's pipeline, after NIO's `HTTPServerPipelineHandler` and the idle
/// timeout, before the conversion to HTTP types (which, with the handlers after it, cost ~5 % of a signing
/// request): takes the requests ``EventLoopSigning`` serves and passes every other part on as it came. It only
/// executes what ``SigningConnectionStateMachine`` decides: the request deadline of a body being collected (what
/// ``RequestDeadlineHandler`` does for the router's requests), keep-alive, the hand-over of a request to the
/// router (one whose credential it cannot check at once), and the answer once its record is committed or the
/// pipeline that waits has run.
final class EventLoopSigningHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The route's in-progress meter, looked up once (``RequestMetrics/active(method:)`` takes a lock per lookup).
    private static let active = RequestMetrics.active(method: "POST")

    private let signing: EventLoopSigning
    private let logger: Logger
    private var machine: SigningConnectionStateMachine<EventLoopClock>
    /// Closes the connection when a body being collected has not arrived within the request timeout.
    private var deadline: Scheduled<Void>?
    /// The connection's event loop as a task executor: the pipeline that waits runs its steps there
    /// (``EventLoopSigning/answer(_:_:on:completion:)``).
    private let executor: EventLoopTaskExecutor

    init(signing: EventLoopSigning, requestTimeout: Duration, eventLoop: any EventLoop, logger: Logger) {
        self.signing = signing
        self.logger = logger
        self.executor = EventLoopTaskExecutor(eventLoop)
        // On the event loop's clock, as the deadline's timer: a test's `EmbeddedEventLoop` moves both by hand.
        self.machine = SigningConnectionStateMachine(
            maximumBodySize: OfferSignerRequestContext.maximumBodySize,
            requestTimeout: requestTimeout,
            clock: EventLoopClock(eventLoop: eventLoop)
        )
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            let taken = machine.acceptsRequest ? signing.takes(head) : nil
            switch machine.headReceived(head, taken: taken, allocator: context.channel.allocator) {
            case .collect, .drop: break
            case .forward: context.fireChannelRead(data)
            case .preconditionFailed(let reason): fail(reason, context: context)
            }
        case .body(let chunk):
            switch machine.bodyReceived(chunk) {
            case .none, .drop: break
            case .forward: context.fireChannelRead(data)
            case .handOver(let head, let body):
                forward(head, body, context: context)
                context.fireChannelRead(data)
            case .preconditionFailed(let reason): fail(reason, context: context)
            }
        case .end(let trailers):
            switch machine.endReceived() {
            case .drop: break
            case .forward(let cancel):
                if cancel { cancelDeadline() }
                context.fireChannelRead(data)
            case .decide(let request, let cancel):
                if cancel { cancelDeadline() }
                decide(request, trailers: trailers, context: context)
            case .preconditionFailed(let reason): fail(reason, context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .arm(let at) = machine.readComplete() { armDeadline(at, context: context) }
        context.fireChannelReadComplete()
    }

    /// Closes the connection at `at` if the machine says so then (``SigningConnectionStateMachine/deadlinePassed()``).
    private func armDeadline(_ at: EventLoopClock.Instant, context: ChannelHandlerContext) {
        let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(deadline: at.deadline) {
            let (handler, context) = loop.value
            handler.deadline = nil
            switch handler.machine.deadlinePassed() {
            case .close: context.close(promise: nil)
            case .doNothing: break
            }
        }
    }

    /// A transition NIO's pipelining handler rules out happened: loud in a debug build, the connection closed in a
    /// release build (``SigningConnectionStateMachine``).
    private func fail(_ reason: String, context: ChannelHandlerContext) {
        logger.error("connection state machine: impossible transition", metadata: ["reason": "\(reason)"])
        assertionFailure(reason)
        cancelDeadline()
        context.close(promise: nil)
    }

    /// The client's half-close waits behind an answer of ours (``SigningConnectionStateMachine/BufferedEvent``); any
    /// other event passes on at once.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case ChannelEvent.inputClosed? = event as? ChannelEvent else { return context.fireUserInboundEventTriggered(event) }
        switch machine.eventReceived(.halfClose) {
        case .forward: context.fireUserInboundEventTriggered(event)
        case .hold: break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine.closed()
        cancelDeadline()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    /// Passes a request read so far to the router, as it came.
    private func forward(_ head: HTTPRequestHead, _ body: ByteBuffer, context: ChannelHandlerContext) {
        context.fireChannelRead(wrapInboundOut(.head(head)))
        if body.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(.body(body))) }
    }

    private func decide(
        _ request: SigningConnectionStateMachine<EventLoopClock>.Request,
        trailers: HTTPHeaders?,
        context: ChannelHandlerContext
    ) {
        // The request's start on the metrics' clock: as long ago as on the loop's.
        let start = ContinuousClock.now - request.start.duration(to: machine.clock.now)
        switch signing.outcome(head: request.taken, body: request.body, remoteAddress: context.channel.remoteAddress, logger: logger) {
        case .handOver:
            guard case .proceed = machine.handedOver() else { return fail("a hand-over with no request being decided", context: context) }
            forward(request.head, request.body, context: context)
            context.fireChannelRead(wrapInboundOut(.end(trailers)))
        case .refused(let error, let answering):
            guard case .proceed = machine.answering() else { return fail("an answer with no request being decided", context: context) }
            answer(error: error, answering, since: start, context: context)
        case .signed(let signed, let answering):
            guard case .proceed = machine.answering() else { return fail("an answer with no request being decided", context: context) }
            Self.active.increment()
            let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            // A record that finds the log's writer idle starts it at the end of this tick, after the other requests
            // this loop read in it: they share one batch (one flush) instead of the first going alone.
            signing.commit(
                signed,
                startWhenReady: { start in eventLoop.execute(start) },
                completion: { result in
                    eventLoop.execute {
                        let (handler, context) = loop.value
                        Self.active.decrement()
                        switch result {
                        case .success:
                            handler.answer(signed.output.apiJSON, answering, since: start, context: context)
                        case .failure(let error):
                            handler.answer(error: APIError(error), answering, since: start, context: context)
                        }
                    }
                }
            )
        case .pipeline(let decided, let answering):
            guard case .proceed = machine.answering() else { return fail("an answer with no request being decided", context: context) }
            Self.active.increment()
            let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            signing.answer(decided, answering, on: executor) { result in
                eventLoop.execute {
                    let (handler, context) = loop.value
                    Self.active.decrement()
                    switch result {
                    case .success(let body): handler.answer(body, answering, since: start, context: context)
                    case .failure(let error): handler.answer(error: error, answering, since: start, context: context)
                    }
                }
            }
        }
    }

    private func answer(
        _ body: ByteBuffer,
        _ answering: EventLoopSigning.Answering,
        since start: ContinuousClock.Instant,
        context: ChannelHandlerContext
    ) {
        write(status: .ok, headers: [:], body: body, answering, context: context)
        RequestMetrics.answered(route: EventLoopSigning.path, method: "POST", status: 200, since: start)
        RequestLoggingMiddleware.log(
            method: .post,
            route: EventLoopSigning.path,
            status: .ok,
            since: start,
            identity: answering.identity,
            requestID: answering.requestID,
            logger: answering.base
        )
    }

    private func answer(
        error: APIError,
        _ answering: EventLoopSigning.Answering,
        since start: ContinuousClock.Instant,
        context: ChannelHandlerContext
    ) {
        write(status: error.status, headers: error.headers, body: error.body, answering, context: context)
        RequestMetrics.answered(route: EventLoopSigning.path, method: "POST", status: error.status.code, since: start)
        RequestLoggingMiddleware.log(
            method: .post,
            route: EventLoopSigning.path,
            status: error.status,
            since: start,
            identity: answering.identity,
            requestID: answering.requestID,
            logger: answering.base
        )
    }

    /// Writes an answer as the machine says: and reads on (passing on what it held), or closes once it is written.
    private func write(
        status: HTTPResponse.Status,
        headers: HTTPFields,
        body: ByteBuffer,
        _ answering: EventLoopSigning.Answering,
        context: ChannelHandlerContext
    ) {
        let action = machine.answerReady()
        let keepAlive: Bool
        switch action {
        case .drop: return
        case .preconditionFailed(let reason): return fail(reason, context: context)
        case .write: keepAlive = true
        case .writeAndClose: keepAlive = false
        }
        let head = signing.response(status: status, headers: headers, body: body, requestID: answering.requestID, keepAlive: keepAlive)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        switch action {
        case .write(let release):
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            for event in release {
                switch event {
                case .halfClose: context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
                }
            }
        case .writeAndClose:
            let loop = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loop.value.close(promise: nil) }
        case .drop, .preconditionFailed:
            break
        }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
