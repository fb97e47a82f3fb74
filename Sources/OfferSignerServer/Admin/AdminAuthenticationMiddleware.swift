import Foundation
import HTTPTypes
import Hummingbird

/// Guards `/admin`: no bearer token, 401; a token that is not one of `OFFER_SIGNER_ADMIN_TOKENS`, 403.
/// On success the admin's name is put in the request context, for the audit.
struct AdminAuthenticationMiddleware: RouterMiddleware {
    typealias Context = OfferSignerRequestContext
    let tokens: AdminTokens

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer "),
              case let token = authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces), !token.isEmpty
        else {
            throw APIError(
                status: .unauthorized, code: "unauthorized",
                message: "The admin API needs a bearer token: Authorization: Bearer <one of OFFER_SIGNER_ADMIN_TOKENS>.",
                headers: [.wwwAuthenticate: "Bearer realm=\"offer-signer admin\""])
        }
        guard let admin = tokens.admin(presenting: token) else {
            throw APIError(
                status: .forbidden, code: "forbidden",
                message: tokens.isEmpty ? "The admin API is disabled: no OFFER_SIGNER_ADMIN_TOKENS are configured." : "This token is not an admin token.")
        }
        var context = context
        context.adminName = admin
        return try await next(request, context)
    }
}
