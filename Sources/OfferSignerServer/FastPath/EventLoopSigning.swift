import Dispatch
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import OfferApplication
import OfferModel
import OfferSigning
import OfferStore
import Synchronization

/// `POST /v1/offers/sign` answered on the connection's event loop, without a task: the route's common case (a
/// legacy signature for an API key or the open mode, no policy rule that reads the store, no signed transaction)
/// decoded, authenticated, rate-limited, signed, self-verified and queued for the group commit, its answer
/// written when the commit completes. Everything else — a login JWT, a JWS, a rule over stored facts, every
/// request the checks below would refuse — goes to the router unchanged, which answers it through the same
/// pipeline; so do all other routes. See docs/architecture.md ("The event-loop signing path").
///
/// Every step is the router's own: ``ClientAuthenticator/immediateIdentity(authorization:)``,
/// ``Request/decodeJSON(as:from:)`` (after ``SignOfferRequest/init(plainJSON:)``, which reads the common shape
/// the same way or declines), the route's composition (``SignRoute``: the customer, their limit, the
/// application's ``Signing/prepareSigning(_:)``), ``Signing/commit(_:startWhenReady:completion:)``, the error mapping
/// (``APIError/init(pipeline:logger:)``), the access log, the request ID and the metrics labels. What this adds is
/// only the transport.
public struct EventLoopSigning: Sendable {
    /// The route it serves.
    static let path = "/v1/offers/sign"

    let signing: Signing
    /// `nil`: the open mode of ``buildRouter(useCases:adminTokens:metricsRegistry:authenticator:rateLimits:part:addOn:)``
    /// without an authenticator (every caller is `open`, no per-credential limit).
    let authenticator: ClientAuthenticator?
    let limits: RateLimits
    /// The `Server` header, as the application's configuration sets it.
    let serverName: String?

    /// Creates the path for the application's public listener.
    public init(signing: Signing, authenticator: ClientAuthenticator?, limits: RateLimits, serverName: String?) {
        self.signing = signing
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
        guard head.method == .POST, head.uri == Self.path else { return nil }
        // One pass over the headers for the three the path reads (NIO's `headers[name]` made an array for each).
        var contentType: String?
        var authorization: String?
        var requestID: String?
        for (name, value) in head.headers {
            if Self.isNamed(name, "content-type") {
                guard contentType == nil else { return nil }
                contentType = value
            } else if Self.isNamed(name, "authorization") {
                guard authorization == nil else { return nil }
                authorization = value
            } else if Self.isNamed(name, "x-request-id") {
                guard requestID == nil else { return nil }
                requestID = value
            }
        }
        guard let contentType, Request.isJSON(contentType) else { return nil }
        return Head(authorization: authorization, requestID: requestID, keepAlive: Self.keepsAlive(head))
    }

    /// Whether a header's name is `lowercased` in any case (ASCII letters folded, as NIO's lookup folds them).
    private static func isNamed(_ name: String, _ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        guard name.utf8.count == expected.count else { return false }
        return zip(name.utf8, expected).allSatisfy { byte, lower in
            byte == lower || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) && byte | 0x20 == lower
        }
    }

    /// Whether the connection stays open after the answer: NIO's reading of `Connection` (tokens, any case; HTTP/1.0
    /// only with `keep-alive`). ``HTTP1ConformanceHandler``, before both paths, has already written a head that does
    /// not keep alive as exactly `Connection: close`, which is what the router reads.
    static func keepsAlive(_ head: HTTPRequestHead) -> Bool {
        head.isKeepAlive
    }

    /// What the path does with a complete request.
    enum Outcome {
        /// The router answers it (the parts are passed on as they came): a credential this path cannot check
        /// without suspending (a login JWT) or none it accepts. Nothing of the request was read or spent here.
        case handOver
        /// Answered here: an error, already final.
        case refused(APIError, Answering)
        /// Signed: the answer, once its record is committed (``commit(_:startWhenReady:completion:)``).
        case signed(SignedAtOnce, Answering)
        /// Authenticated, decoded, admitted and validated here (its app, offer and rule resolved), answered by the
        /// pipeline that waits (stored facts, the App Store, a signed transaction, a JWS): ``answer(_:_:completion:)``
        /// runs it, nothing is checked twice.
        case pipeline(PreparedSigning, Answering)
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

    /// Decides a complete request in the router's order: the credential (``ClientAuthenticationMiddleware``) and its
    /// limit, the body, the customer it names and their limit (the route), then the signature. Only a credential
    /// this path cannot check at once hands the request over, before anything else is read; every later refusal is
    /// the router's own error, mapped by ``APIError/init(pipeline:logger:)``.
    func outcome(head: Head, body: ByteBuffer, remoteAddress: SocketAddress?, logger base: Logger) -> Outcome {
        let identity: ClientIdentity
        if let authenticator {
            guard let known = authenticator.immediateIdentity(authorization: head.authorization) else { return .handOver }
            identity = known
        } else {
            identity = .open
        }
        let answering = Answering(requestID: RequestLoggingMiddleware.requestID(from: head.requestID), base: base, identity: identity)
        do {
            if authenticator != nil {
                try limits.admit(credential: identity.rateLimitCredential(remoteAddress: remoteAddress), identity: identity)
            }
            let request = try SignOfferRequest(plainJSON: body) ?? Request.decodeJSON(as: SignOfferRequest.self, from: body)
            switch try SignRoute.prepare(request, identity: identity, limits: limits, signing: signing) {
            case .signed(let signing): return .signed(.free(try signing()), answering)
            case .signedHolding(let held): return .signed(.holding(held), answering)
            case .pipeline(let prepared): return .pipeline(prepared, answering)
            }
        } catch {
            return .refused(APIError(pipeline: error, logger: answering.logger), answering)
        }
    }

    /// A request signed on the event loop: by a flow without a rule over the store, or decided under its customer's
    /// lock, held until its record is durable.
    enum SignedAtOnce {
        case free(SignedOutput<SignedLegacyOffer>)
        case holding(CustomerLockHeld<SignedLegacyOffer>)

        /// The answer.
        var output: SignedLegacyOffer {
            switch self {
            case .free(let signed): signed.output
            case .holding(let held): held.signed.output
            }
        }
    }

    /// Records a signature made at once through the group commit (releasing its customer's lock once it is durable,
    /// when held) and calls `completion` on a store thread.
    func commit(
        _ signed: SignedAtOnce,
        startWhenReady: @escaping StartWhenReady,
        completion: @escaping @Sendable (Result<Void, OfferServiceError>) -> Void
    ) {
        switch signed {
        case .free(let signed): signing.commit(signed.record, startWhenReady: startWhenReady, completion: completion)
        case .holding(let held): signing.commit(held, startWhenReady: startWhenReady, completion: completion)
        }
    }

    /// Runs the pipeline for a request decided as ``Outcome/pipeline(_:_:)`` in a task and calls `completion` with
    /// the answer's body (what the route answers, encoded as the route's responses are) or its mapped error. Lines
    /// logged meanwhile by other loggers (the notification ingestor's, the store's) carry the request's ID, as on
    /// the router (``RequestMetadata``).
    ///
    /// The task prefers `executor` (the connection's event loop, ``EventLoopTaskExecutor``): its steps run on the
    /// loop that answers, between the store's awaits, instead of hopping to the shared pool and back at each one.
    func answer(
        _ prepared: PreparedSigning,
        _ answering: Answering,
        on executor: (any TaskExecutor)? = nil,
        completion: @escaping @Sendable (Result<ByteBuffer, APIError>) -> Void
    ) {
        Task(executorPreference: executor) {
            await RequestMetadata.$requestID.withValue(answering.requestID) {
                do {
                    completion(.success(try await signing.sign(prepared).apiJSON))
                } catch {
                    completion(.failure(APIError(pipeline: error, logger: answering.logger)))
                }
            }
        }
    }

    /// A response's head, with the headers the router's responses carry, in their order and spelling (as
    /// Hummingbird's conversion from HTTP types writes them: HTTP/1.1, each field's name as given).
    func response(
        status: HTTPResponse.Status,
        headers extra: HTTPFields = [:],
        body: ByteBuffer,
        requestID: String,
        keepAlive: Bool
    ) -> HTTPResponseHead {
        var headers = HTTPHeaders()
        headers.reserveCapacity(extra.count + 6)
        for field in extra { headers.add(name: field.name.rawName, value: field.value) }
        headers.add(name: HTTPField.Name.contentType.rawName, value: "application/json; charset=utf-8")
        headers.add(name: HTTPField.Name.contentLength.rawName, value: String(body.readableBytes))
        headers.add(name: RequestLoggingMiddleware.header.rawName, value: requestID)
        headers.add(name: HTTPField.Name.date.rawName, value: HTTPDate.now())
        if let serverName { headers.add(name: HTTPField.Name.server.rawName, value: serverName) }
        if !keepAlive { headers.add(name: HTTPField.Name.connection.rawName, value: "close") }
        return HTTPResponseHead(
            version: .http1_1,
            status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase),
            headers: headers
        )
    }
}
