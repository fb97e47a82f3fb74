import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on loopback that a test can cut and restore: what a store sees when its database stops (every
/// connection closed, new ones refused) or goes silent (connections kept, nothing forwarded), without touching the
/// database other tests share.
///
/// ## Usage
///
/// ```swift
/// let proxy = try await TCPProxy(upstreamHost: "127.0.0.1", upstreamPort: 5432)
/// // connect to 127.0.0.1:\(proxy.port) …
/// try await proxy.cut()
/// try await proxy.restore()
/// try await proxy.close()
/// ```
final class TCPProxy: Sendable {
    /// What the proxy does.
    enum Mode: Sendable {
        /// Forwards both ways.
        case forwarding
        /// Connections closed and new ones refused, as a stopped server's.
        case refusing
        /// Connections kept open but nothing forwarded, new ones accepted and left waiting: a host gone silent.
        case silent
    }

    let upstreamHost: String
    let upstreamPort: Int
    private let group: MultiThreadedEventLoopGroup
    private let state: Mutex<State>

    private struct State {
        var port = 0
        var listener: (any Channel)?
        var connections: [any Channel] = []
        var mode = Mode.forwarding
    }

    init(upstreamHost: String, upstreamPort: Int) async throws {
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        state = Mutex(State())
        let listener = try await listen(port: 0)
        state.withLock { state in
            state.port = listener.localAddress?.port ?? 0
            state.listener = listener
        }
    }

    /// The port it listens on (the same after ``restore()``).
    var port: Int { state.withLock { $0.port } }

    /// Closes every connection and the listener: the store's connections end, new ones are refused.
    func cut() async throws {
        let (listener, connections) = state.withLock { state in
            state.mode = .refusing
            defer {
                state.listener = nil
                state.connections = []
            }
            return (state.listener, state.connections)
        }
        for connection in connections { try? await connection.close() }
        try? await listener?.close()
    }

    /// Stops forwarding without closing anything: the store's statements and connection attempts wait unanswered.
    func silence() {
        state.withLock { $0.mode = .silent }
    }

    /// Forwards again (listening again on the same port after ``cut()``); the connections held while silent are
    /// closed, as a host that comes back has forgotten them.
    func restore() async throws {
        let (wasListening, held) = state.withLock { state in
            defer { state.connections = [] }
            return (state.listener != nil, state.connections)
        }
        for connection in held { try? await connection.close() }
        if !wasListening {
            let listener = try await listen(port: port)
            state.withLock { $0.listener = listener }
        }
        state.withLock { $0.mode = .forwarding }
    }

    func close() async throws {
        try await cut()
        try await group.shutdownGracefully()
    }

    fileprivate var mode: Mode { state.withLock { $0.mode } }

    private func track(_ channel: any Channel) {
        let refused = state.withLock { state -> Bool in
            guard state.mode != .refusing else { return true }
            state.connections.append(channel)
            return false
        }
        if refused { channel.close(promise: nil) }
    }

    private func listen(port: Int) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in connect(channel) }
            .bind(host: "127.0.0.1", port: port).get()
    }

    /// Connects `inbound` (a client of the proxy) to the upstream server, unless the proxy is silent.
    private func connect(_ inbound: any Channel) -> EventLoopFuture<Void> {
        track(inbound)
        guard mode == .forwarding else { return inbound.eventLoop.makeSucceededVoidFuture() }
        let inboundGlue = Glue(proxy: self)
        let added = inbound.pipeline.addHandler(inboundGlue)
        added.whenSuccess {
            ClientBootstrap(group: inbound.eventLoop)
                .connect(host: self.upstreamHost, port: self.upstreamPort)
                .whenComplete { result in
                    switch result {
                    case .success(let outbound):
                        self.track(outbound)
                        let outboundGlue = Glue(proxy: self)
                        Glue.pair(inboundGlue, outboundGlue)
                        outbound.pipeline.addHandler(outboundGlue).whenFailure { _ in inbound.close(promise: nil) }
                    case .failure:
                        inbound.close(promise: nil)
                    }
                }
        }
        return added
    }
}

/// One side of a proxied connection: what it reads is written to its partner while the proxy forwards.
private final class Glue: ChannelDuplexHandler, @unchecked Sendable {
    // @unchecked: both sides of a pair live on one event loop (the outbound connection is made on the inbound's).
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let proxy: TCPProxy
    private var partner: Glue?
    private var context: ChannelHandlerContext?
    /// What arrived before the partner was connected.
    private var pending: [ByteBuffer] = []

    init(proxy: TCPProxy) { self.proxy = proxy }

    static func pair(_ first: Glue, _ second: Glue) {
        first.partner = second
        second.partner = first
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let partner, !partner.pending.isEmpty {
            for buffer in partner.pending { context.write(wrapOutboundOut(buffer), promise: nil) }
            partner.pending = []
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard proxy.mode == .forwarding else { return }  // silent: dropped
        let buffer = unwrapInboundIn(data)
        guard let partner, let partnerContext = partner.context else {
            pending.append(buffer)
            return
        }
        partnerContext.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
        partner = nil
        self.context = nil
    }
}
