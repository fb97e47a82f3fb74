import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import OfferSigning
import Synchronization
import OfferApplication

/// `POST /v1/offers/sign` answered on the connection's event loop, without a task: the route's common case (a
/// legacy signature for an API key or the open mode, no policy rule that reads the store, no signed transaction)
/// decoded, authenticated, rate-limited, signed, self-verified and queued for the group commit, its answer
/// written when the commit completes. Everything else — a login JWT, a JWS, a rule over stored facts, every
/// request the checks below would refuse — goes to the router unchanged, which answers it through the same
/// pipeline; so do all other routes. See docs/architecture.md ("The event-loop signing path").
///
/// Every step is the router's own: ``ClientAuthenticator/immediateIdentity(authorization:)``,
/// ``Request/decodeJSON(as:from:)`` (after ``SignOfferRequest/init(plainJSON:)``, which reads the common shape
/// the same way or declines), ``RateLimits``, ``OfferService/immediateLegacySigning(_:)`` (the pipeline's
/// ``OfferService/immediateRun(_:now:)``), ``OfferService/commit(_:completion:)``, the error mapping
/// (``APIError/init(pipeline:logger:)``), the access log, the request ID and the metrics labels. What this adds is
/// only the transport.
public struct EventLoopSigning: Sendable {
    /// The route it serves.
    static let path = "/v1/offers/sign"

    let service: OfferService
    /// `nil`: the open mode of ``buildRouter(service:keyManager:adminTokens:metricsRegistry:authenticator:rateLimits:part:demo:)``
    /// without an authenticator (every caller is `open`, no per-credential limit).
    let authenticator: ClientAuthenticator?
    let limits: RateLimits
    /// The `Server` header, as the application's configuration sets it.
    let serverName: String?

    /// Creates the path for the application's public listener.
    public init(service: OfferService, authenticator: ClientAuthenticator?, limits: RateLimits, serverName: String?) {
        self.service = service
        self.authenticator = authenticator
        self.limits = limits
        self.serverName = serverName
    }

    /// The headers the path reads, from a request head it takes.
    struct Head {
        var authorization: String?
        var requestID: String?
        var keepAlive: Bool
    }

    /// A request head this path takes (the exact route, `POST`, a JSON body; its body decides the rest), with the
    /// headers it reads; `nil`: the router's. A header the path reads that is sent twice is the router's too
    /// (HTTP types would join the values; the router answers as it does for any request).
    func takes(_ head: HTTPRequestHead) -> Head? {
        guard head.method == .POST, head.uri == Self.path,
              let contentType = Self.single("content-type", in: head.headers), let type = contentType, Request.isJSON(type),
              let authorization = Self.single("authorization", in: head.headers),
              let requestID = Self.single(RequestLoggingMiddleware.header.rawName, in: head.headers)
        else { return nil }
        return Head(authorization: authorization, requestID: requestID, keepAlive: Self.keepsAlive(head))
    }

    /// Whether the connection stays open after the answer, as the router decides it: closed when the request's
    /// `Connection` (its values joined, as HTTP types join them) is exactly `close`, or when an HTTP/1.0 request
    /// did not ask for keep-alive (``HTTP10ConnectionCloseHandler`` marks it `close` for the router).
    static func keepsAlive(_ head: HTTPRequestHead) -> Bool {
        if head.version == .http1_0, !head.isKeepAlive { return false }
        return head.headers["connection"].joined(separator: ", ") != "close"
    }

    /// A header's value: `.some(nil)` when absent, `nil` when sent more than once (NIO's lookup, case-insensitive).
    private static func single(_ name: String, in headers: HTTPHeaders) -> String?? {
        let values = headers[name]
        return values.count > 1 ? nil : .some(values.first)
    }

    /// What the path does with a complete request.
    enum Outcome {
        /// The router answers it (the parts are passed on as they came).
        case handOver
        /// Answered here: an error, already final.
        case refused(APIError, Answering)
        /// Signed: the answer, once its record is committed.
        case signed(SignedOutput<SignedLegacyOffer>, Answering)
    }

    /// The request's ID, logger and credential, for its answer and access-log line.
    struct Answering: Sendable {
        var requestID: String
        /// The connection's logger, without the request ID (which the access line takes as its own metadata:
        /// no copy of the logger's metadata a request).
        var base: Logger
        var identity: ClientIdentity

        /// The logger with the request ID, for what the pipeline logs about a refusal.
        var logger: Logger {
            var logger = base
            logger[metadataKey: "requestId"] = .string(requestID)
            return logger
        }
    }

    /// Decides a complete request. Every check that can hand the request over runs before anything is spent on
    /// it (a rate-limit token, a signature), so the router sees a handed-over request as if it came first.
    func outcome(head: Head, body: ByteBuffer, remoteAddress: SocketAddress?, logger base: Logger) -> Outcome {
        let authorization = head.authorization
        let identity: ClientIdentity
        if let authenticator {
            guard let known = authenticator.immediateIdentity(authorization: authorization) else { return .handOver }
            identity = known
        } else {
            identity = .open
        }
        guard var request = SignOfferRequest(plainJSON: body) ?? (try? Request.decodeJSON(as: SignOfferRequest.self, from: body)),
              request.format ?? .legacy == .legacy,
              let named = try? identity.customer(naming: request.applicationUsername)
        else { return .handOver }
        request.applicationUsername = named
        let signing: (() throws -> SignedOutput<SignedLegacyOffer>)
        do {
            guard let immediate = try service.immediateLegacySigning(request) else { return .handOver }
            signing = immediate
        } catch {
            return .handOver
        }
        let answering = Answering(requestID: RequestLoggingMiddleware.requestID(from: head.requestID), base: base, identity: identity)
        do {
            // The router's order: the credential's limit (authentication middleware), then the customer's (route).
            if authenticator != nil {
                try limits.admit(credential: identity.rateLimitCredential(remoteAddress: remoteAddress), identity: identity)
            }
            try limits.admit(customer: named.lowercased(), identity: identity)
            return .signed(try signing(), answering)
        } catch {
            return .refused(APIError(pipeline: error, logger: answering.logger), answering)
        }
    }

    /// A response's head, with the headers the router's responses carry, in their order and spelling (as
    /// Hummingbird's conversion from HTTP types writes them: HTTP/1.1, each field's name as given).
    func response(status: HTTPResponse.Status, headers extra: HTTPFields = [:], body: ByteBuffer, requestID: String, keepAlive: Bool) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(extra.count + 6)
        for field in extra { headers.add(name: field.name.rawName, value: field.value) }
        headers.add(name: HTTPField.Name.contentType.rawName, value: "application/json; charset=utf-8")
        headers.add(name: HTTPField.Name.contentLength.rawName, value: String(body.readableBytes))
        headers.add(name: RequestLoggingMiddleware.header.rawName, value: requestID)
        headers.add(name: HTTPField.Name.date.rawName, value: HTTPDate.now())
        if let serverName { headers.add(name: HTTPField.Name.server.rawName, value: serverName) }
        if !keepAlive { headers.add(name: HTTPField.Name.connection.rawName, value: "close") }
        return HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase), headers: headers)
    }
}

/// The event-loop signing path in a connection's pipeline, right after the HTTP/1 decoder, before the conversion
/// to HTTP types (which, with the handlers after it, cost ~5 % of a signing request): takes the requests
/// ``EventLoopSigning`` serves and passes every other part on as it came. What the handlers after it do for a
/// request, it does for its own: the request deadline (``RequestDeadlineHandler``: armed only when a read ends
/// with the body still incomplete), `Connection: close` and HTTP/1.0 (``HTTP10ConnectionCloseHandler``: the head's
/// keep-alive), and graceful shutdown (Hummingbird's connection-state handler: a quiesce event waits behind a
/// request being read or answered here). The idle timeout is ``HTTP1IdleTimeoutHandler``'s, before it.
///
/// HTTP/1 answers in order: a request is taken only when no request handed to the router is still unanswered, and
/// while an answer is pending, reading stops and what was already read waits, to be handled after the answer.
final class EventLoopSigningHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        case idle
        /// A request of ours, its body arriving.
        case collecting(HTTPRequestHead, EventLoopSigning.Head, ByteBuffer, ContinuousClock.Instant)
        /// The parts of the current request go to the router.
        case forwarding
        /// Our answer is pending (its record committing).
        case answering
    }

    private let signing: EventLoopSigning
    private let logger: Logger
    private let requestTimeout: TimeAmount
    private var state = State.idle
    /// Closes the connection when a body being collected has not arrived within the request timeout.
    private var deadline: Scheduled<Void>?
    /// Requests handed to the router whose response has not ended.
    private var routerRequests = 0
    /// What arrived while an answer was pending, in order: request parts, and the errors (a parse error) and events
    /// (the client's half-close) that must reach the router after them, never ahead of the pending answer.
    private var waiting = CircularBuffer<Inbound>()
    /// Events that arrived while a request of ours was being read (graceful shutdown's quiesce, which would close
    /// a connection the handlers after this one see as idle): passed on once it is answered or handed over.
    private var held: [Any] = []
    private var replaying = false

    private enum Inbound {
        case part(HTTPServerRequestPart)
        case error(any Error)
        case event(Any)
    }
    private var readRequested = false
    private var active = true

    init(signing: EventLoopSigning, requestTimeout: Duration, logger: Logger) {
        self.signing = signing
        self.requestTimeout = TimeAmount(requestTimeout)
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard active else { return }  // closing after a `Connection: close` answer
        if isAnswering {
            waiting.append(.part(part))
        } else {
            handle(part, context: context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if isCollecting { armDeadline(context: context) }
        context.fireChannelReadComplete()
    }

    /// Arms the request deadline of the request being read, once (a read ended with its body incomplete).
    private func armDeadline(context: ChannelHandlerContext) {
        guard deadline == nil else { return }
        let loop = NIOLoopBound(context, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: requestTimeout) { loop.value.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard active else { return }
        if isAnswering {
            waiting.append(.error(error))
        } else {
            context.fireErrorCaught(error)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if isAnswering {
            waiting.append(.event(event))
        } else if isCollecting, event is ChannelShouldQuiesceEvent {
            held.append(event)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func handle(_ part: HTTPServerRequestPart, context: ChannelHandlerContext) {
        switch (state, part) {
        case (.idle, .head(let head)):
            if routerRequests == 0, let taken = signing.takes(head) {
                state = .collecting(head, taken, context.channel.allocator.buffer(capacity: 512), .now)
            } else {
                routerRequests += 1
                state = .forwarding
                context.fireChannelRead(wrapInboundOut(part))
            }
        case (.collecting(let head, let taken, var body, let start), .body(let chunk)):
            guard body.readableBytes + chunk.readableBytes <= OfferSignerRequestContext.maximumBodySize else {
                // Too large for us: the router reads it and answers 413, as for any route.
                handOver(head, body, context: context)
                state = .forwarding
                context.fireChannelRead(wrapInboundOut(part))
                passHeldEvents(context: context)
                return
            }
            state = .idle  // no second reference to the buffer while it grows
            body.writeImmutableBuffer(chunk)
            state = .collecting(head, taken, body, start)
        case (.collecting(let head, let taken, let body, let start), .end(let trailers)):
            cancelDeadline()
            answer(head, taken, body, trailers: trailers, since: start, context: context)
        case (.forwarding, .end):
            state = .idle
            cancelDeadline()  // a request of ours handed over before its end (too large) kept its deadline until now
            context.fireChannelRead(wrapInboundOut(part))
        default:
            context.fireChannelRead(wrapInboundOut(part))
        }
    }

    /// Passes a request read so far to the router, as it came. A deadline already armed stays: the request's
    /// time counts from its head, not from the hand-over.
    private func handOver(_ head: HTTPRequestHead, _ body: ByteBuffer, context: ChannelHandlerContext) {
        routerRequests += 1
        context.fireChannelRead(wrapInboundOut(.head(head)))
        if body.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(.body(body))) }
    }

    private func answer(_ head: HTTPRequestHead, _ taken: EventLoopSigning.Head, _ body: ByteBuffer, trailers: HTTPHeaders?, since start: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let keepAlive = taken.keepAlive
        switch signing.outcome(head: taken, body: body, remoteAddress: context.channel.remoteAddress, logger: logger) {
        case .handOver:
            handOver(head, body, context: context)
            state = .idle
            context.fireChannelRead(wrapInboundOut(.end(trailers)))
            passHeldEvents(context: context)
        case .refused(let error, let answering):
            state = .answering
            finish(error: error, answering, since: start, keepAlive: keepAlive, context: context)
        case .signed(let signed, let answering):
            state = .answering
            EventLoopSigningMetrics.active.increment()
            let loop = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let eventLoop = context.eventLoop
            // A record that finds the log's writer idle starts it at the end of this tick, after the other requests
            // this loop read in it: they share one batch (one flush) instead of the first going alone.
            signing.service.commit(signed.record, startWhenReady: { start in eventLoop.execute(start) }) { result in
                eventLoop.execute {
                    let (handler, context) = loop.value
                    EventLoopSigningMetrics.active.decrement()
                    switch result {
                    case .success:
                        handler.finish(signed.output, answering, since: start, keepAlive: keepAlive, context: context)
                    case .failure(let error):
                        handler.finish(error: APIError(error), answering, since: start, keepAlive: keepAlive, context: context)
                    }
                }
            }
        }
    }

    private func finish(_ offer: SignedLegacyOffer, _ answering: EventLoopSigning.Answering, since start: ContinuousClock.Instant, keepAlive: Bool, context: ChannelHandlerContext) {
        let body = offer.apiJSON
        write(signing.response(status: .ok, body: body, requestID: answering.requestID, keepAlive: keepAlive), body, keepAlive: keepAlive, context: context)
        EventLoopSigningMetrics.answered(.ok, since: start)
        RequestLoggingMiddleware.log(method: .post, route: EventLoopSigning.path, status: .ok, since: start, identity: answering.identity, requestID: answering.requestID, logger: answering.base)
    }

    private func finish(error: APIError, _ answering: EventLoopSigning.Answering, since start: ContinuousClock.Instant, keepAlive: Bool, context: ChannelHandlerContext) {
        let body = error.body
        write(signing.response(status: error.status, headers: error.headers, body: body, requestID: answering.requestID, keepAlive: keepAlive), body, keepAlive: keepAlive, context: context)
        EventLoopSigningMetrics.refused(error.status)
        RequestLoggingMiddleware.log(method: .post, route: EventLoopSigning.path, status: error.status, since: start, identity: answering.identity, requestID: answering.requestID, logger: answering.base)
    }

    /// Writes an answer, then goes on with what was read meanwhile (or closes, for `Connection: close`).
    private func write(_ head: HTTPResponseHead, _ body: ByteBuffer, keepAlive: Bool, context: ChannelHandlerContext) {
        state = .idle
        guard active else { return }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            let loop = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loop.value.close(promise: nil) }
            // Nothing after it is answered (the router would not answer it either).
            active = false
            waiting.removeAll()
            return
        }
        resume(context: context)
    }

    /// Goes on with what arrived while an answer was pending (or a request of ours was read), until the next answer
    /// of ours (which queues the rest again); then reads on. An answer made while replaying (a refusal) returns here
    /// instead of replaying itself, so the stack does not grow with the queue.
    private func resume(context: ChannelHandlerContext) {
        guard !replaying else { return }
        replaying = true
        defer { replaying = false }
        if !waiting.isEmpty {
            while !isAnswering, let next = waiting.popFirst() {
                switch next {
                case .part(let part): handle(part, context: context)
                case .error(let error): context.fireErrorCaught(error)
                case .event(let event):
                    if isCollecting, event is ChannelShouldQuiesceEvent {
                        held.append(event)
                    } else {
                        context.fireUserInboundEventTriggered(event)
                    }
                }
            }
            // What was handed on is delivered to the router at the end of a read (NIOAsyncChannel batches reads).
            context.fireChannelReadComplete()
        }
        // After the replayed requests were passed on: a quiesce passed before them would let the connection-state
        // handler, seeing no request, close the connection under them.
        passHeldEvents(context: context)
        // A request of ours replayed with its body still to come: its read ended before this answer, so
        // `channelReadComplete` will not arm its deadline.
        if isCollecting { armDeadline(context: context) }
        if readRequested, !isAnswering {
            readRequested = false
            context.read()
        }
    }

    /// Passes on the events held while a request of ours was read, once it is neither read nor answered here.
    private func passHeldEvents(context: ChannelHandlerContext) {
        guard !held.isEmpty, !isAnswering, !isCollecting else { return }
        let events = held
        held = []
        for event in events { context.fireUserInboundEventTriggered(event) }
    }

    private var isAnswering: Bool {
        if case .answering = state { true } else { false }
    }

    private var isCollecting: Bool {
        if case .collecting = state { true } else { false }
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }

    func read(context: ChannelHandlerContext) {
        if isAnswering {
            readRequested = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routerRequests = max(routerRequests - 1, 0) }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        active = false
        cancelDeadline()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }
}

/// The metrics the router's `MetricsMiddleware` keeps for a request, kept the same way (same labels) for the
/// requests the event-loop path answers.
enum EventLoopSigningMetrics {
    static let active = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", "POST")])

    private struct Endpoint: Sendable {
        var counter: Counter
        var timer: Timer
        var errors: Counter
    }

    private static let endpoints = Mutex<[Int: Endpoint]>([:])

    private static func endpoint(_ status: HTTPResponse.Status) -> Endpoint {
        endpoints.withLock { cache in
            if let known = cache[status.code] { return known }
            let dimensions = [("http.route", EventLoopSigning.path), ("http.request.method", "POST"), ("http.response.status_code", String(status.code))]
            let made = Endpoint(
                counter: Counter(label: "hb.requests", dimensions: dimensions),
                timer: Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds),
                errors: Counter(label: "hb.request.errors", dimensions: [
                    ("http.route", EventLoopSigning.path), ("http.request.method", "POST"), ("error.type", String(status.code)),
                ]))
            cache[status.code] = made
            return made
        }
    }

    static func answered(_ status: HTTPResponse.Status, since start: ContinuousClock.Instant) {
        let endpoint = endpoint(status)
        endpoint.counter.increment()
        endpoint.timer.record(duration: ContinuousClock.now - start)
    }

    static func refused(_ status: HTTPResponse.Status) {
        let endpoint = endpoint(status)
        endpoint.counter.increment()
        endpoint.errors.increment()
    }
}

/// The `Date` header (RFC 9110 IMF-fixdate), formatted once a second.
enum HTTPDate {
    private static let cache = Mutex<(second: Int, text: String)>((-1, ""))
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func now() -> String {
        var seconds = time(nil)
        return cache.withLock { cache in
            if cache.second == seconds { return cache.text }
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
            let text = "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
            cache = (seconds, text)
            return text
        }
    }
}
