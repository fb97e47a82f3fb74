import Foundation
import HTTPTypes
import Hummingbird
import Metrics
import Synchronization

/// The request metrics, under Hummingbird's names and labels, for both front ends — the router (through
/// ``RequestMetricsMiddleware``) and the event-loop signing path — so that a dashboard sees one service:
/// `hb.requests` and `http.server.request.duration` for every answer, errors included (the duration of a 403 counts
/// like a 200's), and `hb.request.errors` only for statuses of 400 and above (no `error.type="200"` series).
enum RequestMetrics {
    private struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    private struct Endpoint: Sendable {
        var counter: Counter
        var timer: Timer
        /// `nil` below 400.
        var errors: Counter?
    }

    private static let endpoints = Mutex<[Key: Endpoint]>([:])
    private static let meters = Mutex<[String: Meter]>([:])

    private static func endpoint(route: String, method: String, status: Int) -> Endpoint {
        endpoints.withLock { cache in
            let key = Key(route: route, method: method, status: status)
            if let known = cache[key] { return known }
            let dimensions = [("http.route", route), ("http.request.method", method), ("http.response.status_code", String(status))]
            let made = Endpoint(
                counter: Counter(label: "hb.requests", dimensions: dimensions),
                timer: Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds),
                errors: status >= 400
                    ? Counter(
                        label: "hb.request.errors",
                        dimensions: [("http.route", route), ("http.request.method", method), ("error.type", String(status))]
                    )
                    : nil
            )
            cache[key] = made
            return made
        }
    }

    /// The requests of one method in progress.
    static func active(method: String) -> Meter {
        meters.withLock { cache in
            if let known = cache[method] { return known }
            let made = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method)])
            cache[method] = made
            return made
        }
    }

    /// One answered request: counted, timed, and an error from 400 up; tallied for the console (``RequestTally``).
    static func answered(route: String, method: String, status: Int, since start: ContinuousClock.Instant) {
        let endpoint = endpoint(route: route, method: method, status: status)
        let duration = ContinuousClock.now - start
        endpoint.counter.increment()
        endpoint.timer.record(duration: duration)
        endpoint.errors?.increment()
        RequestTally.record(status: status, duration: duration)  // the console's recent error rate and latency
    }
}

/// The router's request metrics (``RequestMetrics``), in place of Hummingbird's `MetricsMiddleware`, which times only
/// the answers that are not errors and registers an error series for every status.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let method = request.method.rawValue
        let active = RequestMetrics.active(method: method)
        active.increment()
        do {
            var response = try await next(request, context)
            let status = response.status.code
            let route = context.endpointPath ?? "Unknown"
            if request.method == .head {
                // A HEAD answer's body is never written (HeadMiddleware drops it): counted now.
                RequestMetrics.answered(route: route, method: method, status: status, since: start)
                active.decrement()
                return response
            }
            let body = response.body
            // Counted once the body is written, as Hummingbird's middleware does.
            response.body = ResponseBody(contentLength: body.contentLength) { writer in
                defer {
                    RequestMetrics.answered(route: route, method: method, status: status, since: start)
                    active.decrement()
                }
                try await body.write(writer)
            }
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status.code ?? 500
            RequestMetrics.answered(route: context.endpointPath ?? "NotFound", method: method, status: status, since: start)
            active.decrement()
            throw error
        }
    }
}
