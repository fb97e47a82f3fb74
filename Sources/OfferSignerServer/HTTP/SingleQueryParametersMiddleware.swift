import Foundation
import Hummingbird

/// Refuses a query that gives a parameter more than once — `?days=1&days=3650` — with 400 `invalid_request`
/// naming it, before the route reads it: which of the two a route would take is not for a client to guess, and a
/// proxy or a log may show the other. Names are compared percent-decoded (`days` and `%64ays` are one name). The
/// one place the admin API's query parameters are checked for it (`/admin/*`, behind the admin authentication).
struct SingleQueryParametersMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let name = Self.repeatedName(in: request) {
            let shown = String(name.prefix(64))
            throw APIError.invalidRequest(field: shown, "The query gives \(shown) more than once; give each query parameter once.")
        }
        return try await next(request, context)
    }

    /// The first parameter name the request's query gives a second time, percent-decoded; `nil` when each is given once.
    static func repeatedName(in request: Request) -> String? {
        guard request.uri.query != nil else { return nil }
        var seen: Set<String> = []
        for (key, _) in request.uri.queryParameters {
            let name = String(key).removingPercentEncoding ?? String(key)
            if !seen.insert(name).inserted { return name }
        }
        return nil
    }
}
