import Foundation
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// How long a connection may take and how many may be open: what keeps idle, half-sent and slow connections
/// from exhausting the process (`OFFER_SIGNER_IDLE_TIMEOUT`, `OFFER_SIGNER_REQUEST_TIMEOUT`,
/// `OFFER_SIGNER_MAX_CONNECTIONS`; docs/operations.md).
public struct ConnectionLimits: Sendable, Hashable {
    /// A connection that has sent no complete request head for this long — since it opened, or since its
    /// last response — is closed: idle keep-alive sockets and slowloris headers alike.
    public var idleTimeout: Duration
    /// A request whose body has not fully arrived this long after its head is dropped with its connection
    /// (a declared `Content-Length` never sent, a body trickled byte by byte): the rule of ``RequestDeadline``.
    public var requestTimeout: Duration
    /// Open connections above this are not accepted until one closes (they wait in the listen backlog); the
    /// default stays below the process's file-descriptor limit so the process never runs out of them.
    public var maximumConnections: Int
    /// What the incomplete request bodies of all connections together may hold, in bytes: a body part beyond it is
    /// answered 503 with `Retry-After` and its connection closed (``HTTP1ConformanceHandler``), so slow senders
    /// cannot make memory grow with the connection count. Default 32 MiB (512 bodies of the 64 KiB limit).
    public var partialBodyBudget: Int

    /// Creates limits.
    public init(
        idleTimeout: Duration = .seconds(30),
        requestTimeout: Duration = .seconds(10),
        maximumConnections: Int = ConnectionLimits.defaultMaximumConnections,
        partialBodyBudget: Int = 32 << 20
    ) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
        self.partialBodyBudget = partialBodyBudget
    }

    /// The file-descriptor limit (`ulimit -n`) less 128 for the store, key files and logs, at most 10,000
    /// and at least 16.
    public static var defaultMaximumConnections: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_000 }
        let descriptors = limit.rlim_cur >= 1 << 40 ? 10_128 : Int(clamping: limit.rlim_cur)  // RLIM_INFINITY is all ones
        return min(max(descriptors - 128, 16), 10_000)
    }
}

/// Closes a connection whose request body has not arrived in full within the request timeout: it executes
/// ``RequestDeadline`` (the rule the event-loop signing path runs for its own requests) on the event loop's clock.
///
/// Installed in every HTTP/1 connection's pipeline after the HTTP codec; the head-and-idle half of the
/// limits is ``HTTP1IdleTimeoutHandler``, which closes a connection that has not completed a request head.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: Duration
    /// Made when the handler joins a pipeline: its clock is that pipeline's event loop.
    private var deadline: RequestDeadline<EventLoopClock>?
    private var timer: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = RequestDeadline(timeout: timeout, clock: EventLoopClock(eventLoop: context.eventLoop))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.requestStarted()
        case .end:
            if deadline?.requestEnded() == true { cancelTimer() }
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .arm(let at) = deadline?.readComplete() {
            let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(deadline: at.deadline) {
                let (handler, context) = loop.value
                handler.timer = nil
                switch handler.deadline?.timerFired() {
                case .close: context.close(promise: nil)
                case .doNothing, nil: break
                }
            }
        }
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.closed()
        cancelTimer()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}

/// Closes a connection that has been idle for the idle timeout: it executes ``IdleTimeoutStateMachine``
/// (Hummingbird's rule) at the front of the pipeline, where it sees every request — the event-loop signing path's
/// too, which the handlers after the conversion to HTTP types never see — on the event loop's clock.
final class HTTP1IdleTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let idleTimeout: Duration
    /// Made when the handler joins a pipeline: its clock is that pipeline's event loop.
    private var machine: IdleTimeoutStateMachine<EventLoopClock>?
    private var timer: Scheduled<Void>?

    init(idleTimeout: Duration) {
        self.idleTimeout = idleTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        machine = IdleTimeoutStateMachine(idleTimeout: idleTimeout, clock: EventLoopClock(eventLoop: context.eventLoop))
        if context.channel.isActive { execute(machine?.becameActive(), context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        execute(machine?.becameActive(), context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        machine?.becameInactive()
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: machine?.read(.head)
        case .body: machine?.read(.body)
        case .end: machine?.read(.end)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { execute(machine?.wroteResponseEnd(), context: context) }
        context.write(data, promise: promise)
    }

    private func execute(_ action: IdleTimeoutStateMachine<EventLoopClock>.TimerAction?, context: ChannelHandlerContext) {
        guard case .schedule(let deadline) = action else { return }
        schedule(at: deadline, context: context)
    }

    private func schedule(at deadline: EventLoopClock.Instant, context: ChannelHandlerContext) {
        guard timer == nil else { return }  // the running timer reschedules itself from the last activity
        let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline.deadline) {
            let (handler, context) = loop.value
            handler.timer = nil
            switch handler.machine?.timerFired() {
            case .close: context.close(promise: nil)
            case .reschedule(let deadline): handler.schedule(at: deadline, context: context)
            case .doNothing, nil: break
            }
        }
    }
}

/// Hummingbird's HTTP/1 channel with the service's connection handling added: ``ChunkSizeGuard`` around the HTTP/1 decoder (chunk sizes no Int64
/// holds), NIO's pipelining handler after the decoder, then what RFC 9110/9112 ask that NIO leaves to the server (``HTTP1ConformanceHandler``:
/// `Connection` tokens, transfer codings, `CONNECT`, `Upgrade`, `100 Continue`, the budget of incomplete bodies), the idle timeout
/// (``HTTP1IdleTimeoutHandler``, instead of Hummingbird's), on the public listener the event-loop signing path, and the request deadline (after the
/// conversion to HTTP types).
struct OfferSignerHTTP1Channel: HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel
    let limits: ConnectionLimits
    let signing: EventLoopSigning?
    /// Shared by every connection of the listener.
    let budget: PartialBodyBudget

    var responder: Responder { inner.responder }

    /// The server builder for `Application(server:)`; `signing`: the event-loop path of `POST /v1/offers/sign`.
    static func server(limits: ConnectionLimits, signing: EventLoopSigning? = nil) -> HTTPServerBuilder {
        let budget = PartialBodyBudget(limit: limits.partialBodyBudget)
        return HTTPServerBuilder { responder in
            // No idle timeout of Hummingbird's: its handler would not see the event-loop path's requests.
            OfferSignerHTTP1Channel(
                inner: HTTP1Channel(
                    responder: responder,
                    configuration: .init(
                        additionalChannelHandlers: [RequestDeadlineHandler(timeout: limits.requestTimeout)],
                        idleTimeout: nil
                    )
                ),
                limits: limits,
                signing: signing,
                budget: budget
            )
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            // Chunk sizes no Int64 holds: 400 at once instead of a wait for the request timeout (the decoder
            // tells no handler a chunk's size, so the guard reads the framing beside it).
            let pending = ChunkSizeGuard.Pending()
            try operations.addHandler(ChunkSizeGuard(pending: pending), position: .before(decoder))
            // Right after the decoder, so that it sees each head as the decoder produces it.
            let heads = ChunkSizeGuard.Heads(pending: pending)
            try operations.addHandler(heads, position: .after(decoder))
            // HTTP/1 pipelining by NIO's own handler, for both paths: a request is delivered only after the previous
            // response has ended, reading pauses meanwhile, a parse error and the half-close wait behind the pending
            // response, and graceful shutdown closes the connection once the response in flight has ended.
            let pipelining = HTTPServerPipelineHandler()
            try operations.addHandler(pipelining, position: .after(heads))
            let conformance = HTTP1ConformanceHandler(budget: budget)
            try operations.addHandler(conformance, position: .after(pipelining))
            let idle = HTTP1IdleTimeoutHandler(idleTimeout: limits.idleTimeout)
            try operations.addHandler(idle, position: .after(conformance))
            if let signing {
                try operations.addHandler(
                    EventLoopSigningHandler(signing: signing, requestTimeout: limits.requestTimeout, eventLoop: channel.eventLoop, logger: logger),
                    position: .after(idle)
                )
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
