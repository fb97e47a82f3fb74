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
                    status: .methodNotAllowed,
                    code: "method_not_allowed",
                    message: "\(request.method.rawValue) is not accepted here; this endpoint accepts \(allowed.joined(separator: ", ")).",
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

extension APIError {
    /// The API error of a signing error; an internal one (a failed self-check, a broken key) is logged — code
    /// and message, never key material.
    init(signing error: OfferSigningError, logger: Logger) {
        self.init(error)
        if error.code == .selfCheckFailed || code == "internal" {
            logger.error("signing failed", metadata: ["code": "\(error.code)", "message": "\(error.message)"])
        }
    }

    /// The API error of anything the application throws: the one mapping from its coded errors to HTTP, which
    /// the router (through this middleware) and the event-loop path both use; anything unknown is logged by type
    /// and is 500 `internal`.
    init(pipeline error: any Error, logger: Logger) {
        switch error {
        case let error as APIError: self = error
        case let error as OfferServiceError: self.init(error)
        case let error as OfferSigningError: self.init(signing: error, logger: logger)
        case let error as KeyManagementError: self.init(error)
        case let error as DecodingError: self.init(error)
        case let error as RetentionMessagingError: self.init(error)
        default:
            logger.error("unexpected error", metadata: ["type": "\(type(of: error))"])
            self = .internal
        }
    }

    init(httpError: HTTPError) {
        switch httpError.status {
        case .notFound:
            self.init(status: .notFound, code: "not_found", message: "No such endpoint; see GET /openapi.yaml or docs/api.md for the API.")
        case .methodNotAllowed:
            self.init(status: .methodNotAllowed, code: "method_not_allowed", message: "This endpoint does not accept this method.")
        case .contentTooLarge:
            self.init(status: .contentTooLarge, code: "payload_too_large", message: "The request body is too large.")
        case .badRequest:
            self.init(status: .badRequest, code: "invalid_request", message: httpError.body ?? "The request is not valid.")
        case .unauthorized:
            self.init(status: .unauthorized, code: "unauthorized", message: httpError.body ?? "Authentication is required.")
        case .forbidden:
            self.init(status: .forbidden, code: "forbidden", message: httpError.body ?? "Not allowed.")
        default:
            let status = httpError.status
            self.init(status: status, code: status.code >= 500 ? "internal" : "invalid_request", message: httpError.body ?? status.reasonPhrase)
        }
    }
}
