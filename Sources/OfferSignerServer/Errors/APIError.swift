import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferSigning

/// The one error shape of the HTTP API (docs/design.md §2):
///
///     {"error": {"code": "<snake_case>", "message": "<for humans>", ...details}}
///
/// Every error the service returns goes through this type, and its ``Code`` is the API's whole vocabulary of error
/// codes (docs/api.md). Each error type of the application is mapped to it once, in an exhaustive switch over its
/// codes (`APIError+Mapping.swift`). Messages never contain key material.
public struct APIError: Error, HTTPResponseError, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// The stable code (`invalid_request`, `unknown_app`, …).
    public var code: Code
    /// A sentence for humans that says what to do.
    public var message: String
    /// The request field at fault, for `invalid_request`.
    public var field: String?
    /// Why a customer is not eligible, for `not_eligible`.
    public var reasons: [EligibilityReason]?
    /// Extra headers (`Retry-After`).
    public var headers: HTTPFields

    /// Creates an error answered with the code's status (``Code/status``), or with `status` where one code is
    /// answered with several (Apple refusing this service's token is `unauthorized` with 502, not 401).
    public init(
        _ code: Code,
        _ message: String,
        field: String? = nil,
        reasons: [EligibilityReason]? = nil,
        headers: HTTPFields = [:],
        status: HTTPResponse.Status? = nil
    ) {
        self.status = status ?? code.status
        self.code = code
        self.message = message
        self.field = field
        self.reasons = reasons
        self.headers = headers
    }

    /// 503 `store_unavailable`: the customer store or the issued-signature log cannot be used; nothing was
    /// signed, or the signature was not returned.
    public static let storeUnavailable = APIError(
        .storeUnavailable,
        "The customer store is unavailable; no offer was signed. Try again shortly.",
        headers: [.retryAfter: "1"]
    )

    /// 400 `invalid_request` naming a field.
    public static func invalidRequest(field: String, _ message: String) -> APIError {
        APIError(.invalidRequest, message, field: field)
    }

    /// 400 `malformed_json`.
    public static let malformedJSON = APIError(
        .malformedJSON,
        "The request body is not valid JSON; send a JSON object with Content-Type: application/json."
    )

    /// 400 `malformed_request`: the request's HTTP/1.1 framing is broken (a header line, Content-Length, a chunk size).
    public static let malformedRequest = APIError(
        .malformedRequest,
        "The request is not well-formed HTTP: a bad Content-Length, chunk size or header line, for example; "
            + "fix the client's framing."
    )

    /// 415 `unsupported_media_type`: the body is not declared as JSON.
    public static let unsupportedMediaType = APIError(
        .unsupportedMediaType,
        "Send the request body as JSON with the header Content-Type: application/json."
    )

    /// 413 `payload_too_large`.
    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(.payloadTooLarge, "The request body is larger than \(limit) bytes.")
    }

    /// 500 `internal`: details are logged, never returned.
    public static let `internal` = APIError(
        .internal,
        "An internal error occurred; it has been logged. Try again, and report it if it persists."
    )

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The error envelope, `{"error": {"code", "message", "field"?, "reasons"?}}`, as sent.
    var body: ByteBuffer {
        ErrorEnvelope(error: .init(code: code.rawValue, message: message, field: field, reasons: reasons)).apiJSON
    }
}

struct ErrorEnvelope: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
        var field: String?
        var reasons: [EligibilityReason]?
    }
    var error: Detail
}

extension ErrorEnvelope: APIJSONWritable {
    /// The envelope as ``Foundation/JSONEncoder/api`` writes it (keys sorted), written directly: a refusal (a
    /// cool-down, a cap) is the one error of the signing path under load, and the encoder took tens of microseconds to
    /// write it.
    func writeJSON<Output: APIJSONOutput>(to out: inout Output) {
        out.raw("{\"error\":{\"code\":")
        out.literal(error.code)
        if let field = error.field {
            out.raw(",\"field\":")
            out.literal(field)
        }
        out.raw(",\"message\":")
        out.literal(error.message)
        if let reasons = error.reasons {
            out.raw(",\"reasons\":[")
            for (index, reason) in reasons.enumerated() {
                out.raw(index == 0 ? "{\"code\":" : ",{\"code\":")
                out.literal(reason.code)
                out.raw(",\"message\":")
                out.literal(reason.message)
                out.raw(",\"rule\":")
                out.literal(reason.rule)
                out.raw("}")
            }
            out.raw("]")
        }
        out.raw("}}")
    }
}

extension JSONEncoder {
    /// The API's encoder: sorted keys, `/` not escaped (base64 signatures stay readable), and every date as Unix
    /// milliseconds, an integer (the one time format of the API, as in Apple's APIs and the legacy signature's
    /// timestamp). A date beyond what 64 bits of milliseconds hold (signed App Store data may carry one) is
    /// clamped, never trapped on.
    /// One instance, made once: an encoder whose options never change is safe to share (a fresh one cost
    /// microseconds a response).
    static let api: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
            try container.encode(Int64(exactly: milliseconds) ?? (milliseconds > 0 ? Int64.max : Int64.min))
        }
        return encoder
    }()

    /// A JSON answer's body: the value as this encoder writes it, then a newline, as every answer of the API ends
    /// (a terminal prompt after `curl` starts on its own line; JSON readers skip the whitespace).
    func answer(_ value: some Encodable) throws -> ByteBuffer {
        let data = try encode(value)
        var buffer = ByteBufferAllocator().buffer(capacity: data.count + 1)
        buffer.writeBytes(data)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }
}

/// The router's response encoder: ``Foundation/JSONEncoder/api``'s JSON and a newline (``Foundation/JSONEncoder/answer(_:)``).
struct APIResponseEncoder: ResponseEncoder {
    func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        let body = try JSONEncoder.api.answer(value)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .contentLength: String(body.readableBytes)],
            body: .init(byteBuffer: body)
        )
    }
}
