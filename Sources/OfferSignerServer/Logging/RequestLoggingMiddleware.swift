import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// The ID of the request being handled, for lines logged with a logger other than the request's own (the
/// notification ingestor's, the key manager's, the store's): install ``provider`` as the logging system's
/// metadata provider (`serve` does) and every line logged while a request is handled carries `requestId`.
public enum RequestMetadata {
    /// The current request's ID, set by the request middleware for the handling of one request.
    @TaskLocal public static var requestID: String?

    /// Adds `requestId` to a line logged while a request is handled.
    public static let provider = Logger.MetadataProvider {
        guard let id = requestID else { return [:] }
        return ["requestId": .string(id)]
    }
}

/// What the middleware inside learns about a request that the access log reports once the response is
/// known: shared by every copy of the request's context (a context is a value; a middleware's changes are
/// seen only by what it calls, not by the middleware that called it).
public final class RequestLogRecord: Sendable {
    private let state = Mutex<(identity: ClientIdentity?, admin: String?)>((nil, nil))

    public init() {}

    /// Who is calling `/v1/offers/*`, set by the client authentication; the access log shows its
    /// ``ClientIdentity/credentialName`` (an API key's name, `jwt` or `open`; never a token or a customer).
    public var identity: ClientIdentity? {
        get { state.withLock { $0.identity } }
        set { state.withLock { $0.identity = newValue } }
    }

    /// The admin making an `/admin` request (the name of their token).
    public var admin: String? {
        get { state.withLock { $0.admin } }
        set { state.withLock { $0.admin = newValue } }
    }
}

/// The outermost middleware: gives every request an ID and writes its access-log line.
///
/// - The ID is the client's `X-Request-Id` when it is well-formed (1–64 characters of `A-Z a-z 0-9 . _ -`),
///   else a new UUID. It goes into the request's logger metadata (`requestId`), so every line logged while
///   handling the request carries it, and back to the client as `X-Request-Id` on every response, errors
///   included.
/// - One line per request at `info`, message `request`: `method`, `route` (the endpoint's path pattern, such as
///   `/admin/customers/{bundleIdentifier}/{applicationUsername}`, never the raw path, which can hold a customer),
///   `status`, `durationMs`, and `credential` / `admin` when the request authenticated. Never a header value.
struct RequestLoggingMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext

    static let header = HTTPField.Name("X-Request-Id")!

    /// The client's ID when it is well-formed, else a new one.
    static func requestID(from client: String?) -> String {
        if let client, (1...64).contains(client.utf8.count),
            client.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                    || byte == UInt8(ascii: "-")
            })
        {
            return client
        }
        return RequestIDs.next()
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let id = Self.requestID(from: request.headers[Self.header])
        var context = context
        context.logger[metadataKey: "requestId"] = .string(id)
        do {
            var response = try await RequestMetadata.$requestID.withValue(id) { try await next(request, context) }
            response.headers[Self.header] = id
            log(request, context: context, status: response.status, since: start)
            return response
        } catch {
            // The error mapping inside turns every error into an APIError; anything else is mapped here so the
            // header is never lost.
            var mapped: APIError
            switch error {
            case let error as APIError: mapped = error
            case let error as HTTPError: mapped = APIError(httpError: error)
            default: mapped = .internal
            }
            mapped.headers[Self.header] = id
            log(request, context: context, status: mapped.status, since: start)
            throw mapped
        }
    }

    private func log(_ request: Request, context: Context, status: HTTPResponse.Status, since start: ContinuousClock.Instant) {
        Self.log(
            method: request.method,
            route: context.endpointPath,
            status: status,
            since: start,
            identity: context.requestLog.identity,
            admin: context.requestLog.admin,
            logger: context.logger
        )
    }

    /// Writes one access-log line (this middleware's, and the event-loop signing path's).
    static func log(
        method: HTTPRequest.Method,
        route: String?,
        status: HTTPResponse.Status,
        since start: ContinuousClock.Instant,
        identity: ClientIdentity?,
        admin: String? = nil,
        requestID: String? = nil,
        logger: Logger
    ) {
        guard logger.logLevel <= .info else { return }
        var metadata: Logger.Metadata = [
            "method": .string(method.rawValue),
            "route": .string(route ?? "-"),
            "status": .stringConvertible(status.code),
            "durationMs": .string(Self.milliseconds(ContinuousClock.now - start)),
        ]
        if let identity { metadata["credential"] = .string(identity.credentialName) }
        if let admin { metadata["admin"] = .string(admin) }
        if let requestID { metadata["requestId"] = .string(requestID) }  // when the logger does not carry it
        logger.info("request", metadata: metadata)
    }

    /// A duration in milliseconds with three decimals (`2.562`), as `String(format: "%.3f")` writes it but
    /// without Foundation's formatter (a few microseconds a request).
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0, seconds < Int64.max / 1_000_000 else {
            return String(format: "%.3f", Double(seconds) * 1000 + Double(attoseconds) / 1e15)
        }
        // Microseconds, rounded half up (attoseconds / 1e12).
        let microseconds = seconds * 1_000_000 + (attoseconds + 500_000_000_000) / 1_000_000_000_000
        let fraction = String(microseconds % 1000)
        return "\(microseconds / 1000)." + String(repeating: "0", count: 3 - fraction.utf8.count) + fraction
    }
}
