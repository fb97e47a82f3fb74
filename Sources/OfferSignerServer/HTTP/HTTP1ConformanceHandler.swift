import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// What RFC 9110 and RFC 9112 ask of a server that NIO's decoder leaves to it, for both front ends (it sits before
/// the event-loop signing path and the router):
///
/// - `Connection` read as tokens, in any case and in a list (`Close`, `close, keep-alive`), and an HTTP/1.0 request
///   without `keep-alive`: the head then carries exactly `Connection: close`, which both paths honour.
/// - A transfer coding other than `chunked` (`gzip, chunked`): 501 and close; the body would otherwise be read as
///   if it were not coded (RFC 9112 §6.1).
/// - `CONNECT`: 405 and close (this is not a proxy).
/// - An `Upgrade` request (`h2c`): answered as a plain request, then the connection closes — NIO's decoder stops
///   parsing after it, so the connection could not serve another request.
/// - `Expect: 100-continue`: `100 Continue` at once, so a client that holds its body back sends it (RFC 9110 §10.1.1).
/// - A body arriving while all connections' incomplete bodies together hold more than ``PartialBodyBudget``'s limit:
///   503 with `Retry-After` and close, instead of memory growing with the connection count.
/// - A request NIO's decoder cannot parse (a bad `Content-Length`, chunk size or header line), a `Content-Length` no
///   `Int64` holds, or a chunk size no `Int64` holds (``ChunkSizeGuard``, before the decoder): 400
///   `malformed_request` in the API's error shape, and close — NIO's own handler would answer an empty 400. Its
///   pipelining handler, in front, holds the error until the response in flight has ended; if a response has begun
///   nonetheless, the connection only closes.
final class HTTP1ConformanceHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let budget: PartialBodyBudget
    /// Bytes of the current request's body counted against the budget.
    private var held = 0
    /// A refused request: its remaining parts are dropped, and the connection closes after the answer.
    private var refused = false
    /// The current request does not keep the connection alive: its response says `Connection: close` (RFC 9112 §9.6),
    /// whichever path writes it.
    private var closing = false
    /// A response head has been written and its end has not.
    private var responding = false

    init(budget: PartialBodyBudget) {
        self.budget = budget
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(var head):
            if head.method == .CONNECT {
                let answer = APIError(
                    .methodNotAllowed,
                    "CONNECT is not accepted: this service is not a proxy.",
                    headers: [.allow: "GET, POST"]
                )
                return refuse(answer, context: context)
            }
            if let coding = Self.unknownTransferCoding(head.headers) {
                let answer = APIError(
                    .unsupportedTransferCoding,
                    "The transfer coding \(coding.prefix(32)) is not supported; send the body plain, with Content-Length or "
                        + "Transfer-Encoding: chunked only."
                )
                return refuse(answer, context: context)
            }
            // NIO's decoder takes any Content-Length up to 2^64 − 1 and waits for that many bytes; a length no Int64
            // holds is no body anyone sends: 400 at once, as for a length it cannot parse.
            if let length = head.headers.first(name: "content-length"), Int64(length) == nil {
                return refuse(.malformedRequest, context: context)
            }
            let upgrade = head.headers.contains(name: "upgrade")
            closing = !head.isKeepAlive || upgrade
            if closing {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            }
            if head.version == .http1_1, let expect = head.headers.first(name: "expect"),
                expect.lowercased() == "100-continue"
            {
                head.headers.remove(name: "expect")
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
            context.fireChannelRead(wrapInboundOut(.head(head)))
        case .body(let chunk):
            guard budget.reserve(chunk.readableBytes) else {
                let answer = APIError(
                    .serverBusy,
                    "The server holds too many incomplete request bodies right now; try again in a moment.",
                    headers: [.retryAfter: "1"]
                )
                return refuse(answer, context: context)
            }
            held += chunk.readableBytes
            context.fireChannelRead(data)
        case .end:
            release()
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200: responding = true
        case .end: responding = false
        default: break
        }
        if closing, case .head(var head) = unwrapOutboundIn(data), head.status.code >= 200 {
            closing = false
            if !head.headers.contains(name: "connection") {
                head.headers.add(name: "connection", value: "close")
                return context.write(wrapOutboundOut(.head(head)), promise: promise)
            }
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        guard !refused else { return }
        if responding {
            refused = true
            return context.close(promise: nil)
        }
        refuse(.malformedRequest, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        budget.release(held)
        held = 0
    }

    /// The first transfer coding that is not `chunked`, if any (tokens, in any case, in a list or repeated fields).
    static func unknownTransferCoding(_ headers: HTTPHeaders) -> String? {
        for value in headers["transfer-encoding"] {
            for token in value.split(separator: ",") {
                let coding = token.trimmingCharacters(in: .whitespaces)
                if !coding.isEmpty, coding.lowercased() != "chunked" { return coding }
            }
        }
        return nil
    }

    /// Answers with an API error and closes; what is left of the request is dropped.
    private func refuse(_ error: APIError, context: ChannelHandlerContext) {
        refused = true
        release()
        let status = error.status
        let extra = error.headers
        let body = error.body
        var headers = HTTPHeaders()
        for field in extra { headers.add(name: field.name.rawName, value: field.value) }
        headers.add(name: "content-type", value: "application/json; charset=utf-8")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "connection", value: "close")
        let head = HTTPResponseHead(
            version: .http1_1,
            status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase),
            headers: headers
        )
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let loop = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loop.value.close(promise: nil) }
    }
}

/// How many bytes of incomplete request bodies all connections together may hold (shared by every connection of a
/// listener). A body part that would go over it is refused with 503 and its connection closed.
final class PartialBodyBudget: Sendable {
    /// The limit, in bytes.
    let limit: Int
    private let used = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `bytes` from the budget; `false` (nothing taken) when that would go over the limit.
    func reserve(_ bytes: Int) -> Bool {
        used.withLockedValue { used in
            guard bytes <= limit - used else { return false }
            used += bytes
            return true
        }
    }

    /// Gives `bytes` back.
    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.withLockedValue { $0 = max($0 - bytes, 0) }
    }

    /// What is taken now.
    var inUse: Int { used.withLockedValue { $0 } }
}
