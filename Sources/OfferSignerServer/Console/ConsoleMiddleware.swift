import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferModel

/// Every `/console` response: the security headers (a strict Content-Security-Policy with no third-party origin,
/// `nosniff`, no referrer, no caching), and errors as an HTML page rather than the API's JSON.
///
/// On the console's route group it answers what its routes throw; on the whole router, outside the error mapping
/// and with `onlyUnder: "/console"`, it answers what no console route matched (404, 405 with `Allow`) the same way.
struct ConsoleHeadersMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext

    /// When set, requests outside this path (and its subpaths) pass through untouched.
    var onlyUnder: String? = nil

    /// The headers every console response carries.
    static let securityHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        .cacheControl: "no-store",
    ]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let onlyUnder, request.uri.path != onlyUnder, !request.uri.path.hasPrefix(onlyUnder + "/") {
            return try await next(request, context)
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let apiError: APIError
            if error is NIOTooManyBytesError {
                apiError = APIError.payloadTooLarge(limit: ConsoleForm.limits(forPath: request.uri.path).body)
            } else if let error = error as? HTTPError {
                apiError = APIError(httpError: error)
            } else {
                apiError = APIError(pipeline: error, logger: context.logger)
            }
            response = ConsoleLayout.errorPage(apiError).response(status: apiError.status, headers: apiError.headers)
        }
        for field in Self.securityHeaders { response.headers[field.name] = field.value }
        return response
    }
}

/// The signed-in part of `/console`: without a live session, 303 to `/console/login`; a `POST` whose form does not
/// carry the session's CSRF token (compared in constant time) is 403. Puts the session and the admin's name in the
/// context.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext
    let sessions: ConsoleSessions

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let cookieValue = ConsoleSessions.cookieValue(in: request), let session = try await sessions.session(cookieValue) else {
            return Response(status: .seeOther, headers: [.location: "/console/login"])
        }
        var request = request
        if request.method == .post {
            let form = try await ConsoleForm.body(of: &request)  // collected: the route reads it again
            guard let presented = form[ConsoleSessions.csrfField], ConsoleSessions.constantTimeEqual(presented, session.csrfToken) else {
                context.logger.warning(
                    "console form refused: no or wrong CSRF token",
                    metadata: ["admin": "\(session.admin)", "route": "\(context.endpointPath ?? "-")"]
                )
                throw APIError(
                    .csrf,
                    "This form is stale or did not come from the console; open the page again and resubmit."
                )
            }
        }
        var context = context
        context.adminName = session.admin
        context.consoleSession = session
        return try await next(request, context)
    }
}

extension OfferSignerRequestContext {
    /// The console session (set by ``ConsoleSessionMiddleware`` on every signed-in route).
    var requireConsoleSession: ConsoleSession {
        get throws {
            guard let consoleSession else { throw APIError(.internal, "No console session.") }
            return consoleSession
        }
    }
}
