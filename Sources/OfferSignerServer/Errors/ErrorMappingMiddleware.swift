import AppStoreServerAPI
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import OfferApplication
import OfferKeys
import OfferSigning

/// Turns every error a route throws into the API's one error shape, so that no caller ever sees an empty
/// 500 or a framework-specific body. Unknown errors are logged (type only, never request bodies or keys) and
/// answered with 500 `internal`.
struct ErrorMappingMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The methods each path accepts: a known path with another method is 405 with `Allow`, not 404.
    var allowedMethods: AllowedMethods?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: context.maxUploadSize)
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = allowedMethods?.methods(for: request.uri.path), !allowed.isEmpty {
                throw APIError(
                    .methodNotAllowed,
                    "\(request.method.rawValue) is not accepted here; this endpoint accepts \(allowed.joined(separator: ", ")).",
                    headers: [.allow: allowed.joined(separator: ", ")]
                )
            }
            throw APIError(httpError: error)
        } catch is HTTPParserError {
            throw APIError.malformedRequest
        } catch {
            throw APIError(pipeline: error, logger: context.logger)
        }
    }
}
