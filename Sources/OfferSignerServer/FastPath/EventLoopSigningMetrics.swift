import Foundation
import HTTPTypes
import Metrics
import Synchronization

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
