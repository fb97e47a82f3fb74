import HTTPTypes
import Hummingbird

/// `HEAD` as RFC 9110 §9.3.2 asks of every general-purpose server, with the router's generated `HEAD` endpoints (the
/// `GET` route answers): the response goes out with its status and headers but no body, errors included (their
/// `Content-Length` is the one the body would have had). Outermost, so that no layer's body slips through: a body
/// after a `HEAD` response would be read by the client as the start of the next response.
struct HeadMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method == .head else { return try await next(request, context) }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        let length = response.body.contentLength
        response.body = ResponseBody()
        if let length { response.headers[.contentLength] = String(length) }
        return response
    }
}
