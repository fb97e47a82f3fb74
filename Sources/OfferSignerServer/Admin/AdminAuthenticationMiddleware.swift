import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// Guards `/admin`: no bearer token, 401; a token that is not one of `OFFER_SIGNER_ADMIN_TOKENS`, 403.
/// On success the admin's name is put in the request context, for the audit.
///
/// Failed attempts are logged (the client's address, never the token presented) and throttled per client
/// address (on a PostgreSQL store, across every replica: ``SharedTokenBuckets``):
/// after ``failureBurst`` failures a client may fail again once every ``secondsPerFailure`` seconds; beyond that
/// its failed attempts get 429 `rate_limited` with `Retry-After` (and are logged once each as throttled), so
/// guessing tokens runs at a few attempts a minute.
struct AdminAuthenticationMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext
    let tokens: BearerTokens
    let failures: any LimitBuckets

    /// Failures allowed at once from one address.
    static let failureBurst = 10.0
    /// Then one failure per this many seconds.
    static let secondsPerFailure = 6.0

    init(tokens: BearerTokens, failures: any LimitBuckets = TokenBuckets(rate: 1 / Self.secondsPerFailure, burst: Self.failureBurst)) {
        self.tokens = tokens
        self.failures = failures
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let client = context.remoteAddress?.ipAddress ?? "unknown"
        do {
            let admin = try authenticate(request)
            var context = context
            context.adminName = admin
            return try await next(request, context)
        } catch let error as APIError where error.status == .unauthorized || error.status == .forbidden {
            switch await failures.take(client) {
            case .allowed:
                context.logger.warning(
                    "admin authentication failed",
                    metadata: ["client": "\(client)", "code": "\(error.code)", "route": "\(context.endpointPath ?? "-")"]
                )
                throw error
            case .limited(let retryAfter):
                context.logger.warning("admin authentication throttled", metadata: ["client": "\(client)", "retryAfterSeconds": "\(retryAfter)"])
                throw APIError(
                    .rateLimited,
                    "Too many failed admin authentications from this address; try again in \(retryAfter) seconds with a valid token.",
                    headers: [.retryAfter: "\(retryAfter)"]
                )
            }
        }
    }

    private func authenticate(_ request: Request) throws(APIError) -> String {
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer "),
            case let token = authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces), !token.isEmpty
        else {
            throw APIError(
                .unauthorized,
                "The admin API needs a bearer token: Authorization: Bearer <one of \(variable: .adminTokens)>.",
                headers: [.wwwAuthenticate: "Bearer realm=\"offer-signer admin\""]
            )
        }
        guard let admin = tokens.admin(presenting: token) else {
            throw APIError(
                .forbidden,
                tokens.isEmpty
                    ? "The admin API is disabled: no \(variable: .adminTokens) are configured." : "This token is not an admin token."
            )
        }
        return admin
    }
}
