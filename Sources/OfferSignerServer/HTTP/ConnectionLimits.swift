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
    /// (a declared `Content-Length` never sent, a body trickled byte by byte).
    public var requestTimeout: Duration
    /// Open connections above this are not accepted until one closes (they wait in the listen backlog); the
    /// default stays below the process's file-descriptor limit so the process never runs out of them.
    public var maximumConnections: Int

    /// Creates limits.
    public init(idleTimeout: Duration = .seconds(30), requestTimeout: Duration = .seconds(10), maximumConnections: Int = ConnectionLimits.defaultMaximumConnections) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maximumConnections = maximumConnections
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

/// Closes a connection whose request body has not arrived in full within the request timeout after its head.
///
/// Installed in every HTTP/1 connection's pipeline after the HTTP codec; the head-and-idle half of the
/// limits is Hummingbird's idle timeout, which closes a connection that has not completed a request head.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: Duration) {
        self.timeout = TimeAmount(timeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline?.cancel()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
                loopBound.value.close(promise: nil)
            }
        case .end:
            deadline?.cancel()
            deadline = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}

/// Marks an HTTP/1.0 request that did not ask for keep-alive with `Connection: close`, so that the connection
/// is closed as soon as its response is written (HTTP/1.0's default) instead of lingering until the idle
/// timeout. Sits before the conversion to HTTP types, where the protocol version is still known.
final class HTTP10ConnectionCloseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(var head) = unwrapInboundIn(data), head.version.major == 1, head.version.minor == 0, !head.isKeepAlive {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.fireChannelRead(wrapInboundOut(.head(head)))
        } else {
            context.fireChannelRead(data)
        }
    }
}

/// Hummingbird's HTTP/1 channel with the service's connection handling added: the request deadline (after
/// the HTTP codec), the HTTP/1.0 close (before it) and, on the public listener, the event-loop signing path
/// (after Hummingbird's connection-state handler).
struct OfferSignerHTTP1Channel: HTTPChannelHandler {
    typealias Value = HTTP1Channel.Value
    let inner: HTTP1Channel
    let signing: EventLoopSigning?

    var responder: Responder { inner.responder }

    /// The server builder for `Application(server:)`; `signing`: the event-loop path of `POST /v1/offers/sign`.
    static func server(limits: ConnectionLimits, signing: EventLoopSigning? = nil) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            OfferSignerHTTP1Channel(inner: HTTP1Channel(responder: responder, configuration: .init(
                additionalChannelHandlers: [RequestDeadlineHandler(timeout: limits.requestTimeout)],
                idleTimeout: TimeAmount(limits.idleTimeout))), signing: signing)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let codec = try operations.handler(type: HTTP1ToHTTPServerCodec.self)
            try operations.addHandler(HTTP10ConnectionCloseHandler(), position: .before(codec))
            if let signing {
                let state = try operations.handler(type: HTTPConnectionStateHandler.self)
                try operations.addHandler(EventLoopSigningHandler(signing: signing, logger: logger), position: .after(state))
            }
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
