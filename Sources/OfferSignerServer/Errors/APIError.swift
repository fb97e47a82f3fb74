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
/// Every error the service returns goes through this type; ``init(_:)-(OfferSigningError)`` maps the signing
/// core's errors in one place. Messages never contain key material.
public struct APIError: Error, HTTPResponseError, Sendable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// The stable code (`invalid_request`, `unknown_app`, …).
    public var code: String
    /// A sentence for humans that says what to do.
    public var message: String
    /// The request field at fault, for `invalid_request`.
    public var field: String?
    /// Why a customer is not eligible, for `not_eligible`.
    public var reasons: [EligibilityReason]?
    /// Extra headers (`Retry-After`).
    public var headers: HTTPFields

    /// Creates an error.
    public init(
        status: HTTPResponse.Status,
        code: String,
        message: String,
        field: String? = nil,
        reasons: [EligibilityReason]? = nil,
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.reasons = reasons
        self.headers = headers
    }

    /// 503 `store_unavailable`: the customer store or the issued-signature log cannot be used; nothing was
    /// signed, or the signature was not returned.
    public static let storeUnavailable = APIError(
        status: .serviceUnavailable,
        code: "store_unavailable",
        message: "The customer store is unavailable; no offer was signed. Try again shortly.",
        headers: [.retryAfter: "1"]
    )

    /// 400 `invalid_request` naming a field.
    public static func invalidRequest(field: String, _ message: String) -> APIError {
        APIError(status: .badRequest, code: "invalid_request", message: message, field: field)
    }

    /// 400 `malformed_json`.
    public static let malformedJSON = APIError(
        status: .badRequest,
        code: "malformed_json",
        message: "The request body is not valid JSON; send a JSON object with Content-Type: application/json."
    )

    /// 400 `malformed_request`: the request's HTTP/1.1 framing is broken (a header line, Content-Length, a chunk size).
    public static let malformedRequest = APIError(
        status: .badRequest,
        code: "malformed_request",
        message: "The request is not well-formed HTTP: a bad Content-Length, chunk size or header line, for example; fix the client's framing."
    )

    /// 415 `unsupported_media_type`: the body is not declared as JSON.
    public static let unsupportedMediaType = APIError(
        status: .unsupportedMediaType,
        code: "unsupported_media_type",
        message: "Send the request body as JSON with the header Content-Type: application/json."
    )

    /// 413 `payload_too_large`.
    public static func payloadTooLarge(limit: Int) -> APIError {
        APIError(status: .contentTooLarge, code: "payload_too_large", message: "The request body is larger than \(limit) bytes.")
    }

    /// 500 `internal`: details are logged, never returned.
    public static let `internal` = APIError(
        status: .internalServerError,
        code: "internal",
        message: "An internal error occurred; it has been logged. Try again, and report it if it persists."
    )

    /// Maps an error of the signing core to its HTTP form.
    public init(_ error: OfferSigningError) {
        switch error.code {
        case .invalidField:
            self.init(status: .badRequest, code: "invalid_request", message: error.message, field: error.field)
        case .unknownKey:
            self.init(status: .notFound, code: "unknown_key", message: error.message)
        case .noSigningKey:
            self.init(status: .serviceUnavailable, code: "no_signing_key", message: error.message)
        case .selfCheckFailed:
            self.init(status: .internalServerError, code: "signature_self_check_failed", message: error.message)
        default:
            self.init(status: .internalServerError, code: "internal", message: APIError.internal.message)
        }
    }

    /// Maps an error of the request pipeline: 400 `invalid_request` / `invalid_signed_payload`, 403
    /// `not_eligible` / `customer_mismatch`, 404 `unknown_*`, 409 `transaction_claimed` / `request_identifier_conflict`,
    /// 429 `dry_run_running` (with `Retry-After`), 503 `store_unavailable` /
    /// `issuer_not_configured` / `app_store_unavailable` (with `Retry-After`), 409 `app_store_api_not_configured`, 422
    /// `app_store_data_not_configured`.
    public init(_ error: OfferServiceError) {
        let status: HTTPResponse.Status
        var retryAfter: String?  // every 503 and 429 says when to try again
        switch error.code {
        case .unknownApp, .unknownProduct, .unknownOffer, .unknownTransaction, .noRetentionAnswer, .unknownExperiment: status = .notFound
        case .notEligible, .customerMismatch: status = .forbidden
        case .unauthorized: status = .unauthorized
        // app_store_api_not_configured: nothing a retry fixes; the request needs configuration it lacks.
        case .transactionClaimed, .appStoreNotConfigured, .requestIdentifierConflict, .policyConflict: status = .conflict
        // app_store_data_not_configured: a signedTransaction this service cannot verify; retrying cannot help.
        case .dryRunNeedsFacts, .appStoreDataNotConfigured: status = .unprocessableContent
        case .dryRunRunning: (status, retryAfter) = (.tooManyRequests, "\(OfferService.dryRunRetryAfterSeconds)")
        case .storeUnavailable, .retentionTimedOut: (status, retryAfter) = (.serviceUnavailable, "1")
        case .appStoreUnavailable: (status, retryAfter) = (.serviceUnavailable, "5")
        case .issuerNotConfigured: (status, retryAfter) = (.serviceUnavailable, "3600")
        default: status = .badRequest
        }
        var headers: HTTPFields = [:]
        if let retryAfter { headers[.retryAfter] = retryAfter }
        self.init(status: status, code: error.code.rawValue, message: error.message, field: error.field, reasons: error.reasons, headers: headers)
    }

    /// Maps a key-management failure: 404 `unknown_key`, 409 `key_state_conflict`, 422 `key_reload_failed`,
    /// 503 `store_unavailable` (with `Retry-After`).
    public init(_ error: KeyManagementError) {
        switch error.code {
        case .unknownKey: self.init(status: .notFound, code: error.code.rawValue, message: error.message)
        case .keyStateConflict: self.init(status: .conflict, code: error.code.rawValue, message: error.message)
        case .stateStoreUnavailable, .invalidKeyStates:
            self.init(status: .serviceUnavailable, code: "store_unavailable", message: error.message, headers: [.retryAfter: "1"])
        default: self.init(status: .unprocessableContent, code: error.code.rawValue, message: error.message)
        }
    }

    /// Maps a body that is not strict JSON (``StrictJSON``) to 400 `duplicate_key` (with the key as the field) or
    /// `malformed_json`, with what is wrong and where.
    init(_ violation: StrictJSON.Violation) {
        switch violation.kind {
        case .duplicateKey(let key):
            self.init(status: .badRequest, code: "duplicate_key", message: violation.message, field: key)
        case .malformed:
            self.init(status: .badRequest, code: "malformed_json", message: violation.message)
        }
    }

    /// Maps a decoding failure of a request body to `malformed_json` or `invalid_request` with the field.
    public init(_ error: DecodingError) {
        func path(_ context: DecodingError.Context, appending key: (any CodingKey)? = nil) -> String {
            let keys = context.codingPath + (key.map { [$0] } ?? [])
            return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context, appending: key)
            self = .invalidRequest(field: field, "\(field) is required.")
        case .valueNotFound(_, let context):
            let field = path(context)
            if field.isEmpty {
                self = APIError(status: .badRequest, code: "invalid_request", message: "The request body must be a JSON object.")
            } else {
                self = .invalidRequest(field: field, "\(field) must not be null.")
            }
        case .typeMismatch(let type, let context):
            let field = path(context)
            if field.isEmpty {
                self = APIError(status: .badRequest, code: "invalid_request", message: "The request body must be a JSON object.")
            } else {
                self = .invalidRequest(field: field, "\(field) must be \(Self.describe(type)).")
            }
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                self = .malformedJSON
            } else {
                let field = path(context)
                self = .invalidRequest(field: field, "\(field) has a value this field does not accept; see GET /openapi.yaml for the allowed values.")
            }
        @unknown default:
            self = .malformedJSON
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        let kind = DecodingProblem.describe(type)
        return kind == "a value of another JSON type" ? "\(kind) (see GET /openapi.yaml)" : kind
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The error envelope, `{"error": {"code", "message", "field"?, "reasons"?}}`, as sent.
    var body: ByteBuffer {
        // Strings, an optional string and an array of string pairs: the encoder cannot fail on them.
        (try? JSONEncoder.api.answer(ErrorEnvelope(error: .init(code: code, message: message, field: field, reasons: reasons))))
            ?? ByteBuffer(string: "\n")
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
