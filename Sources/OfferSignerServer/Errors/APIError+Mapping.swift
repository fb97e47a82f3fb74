import AppStoreServerAPI
import HTTPTypes
import Hummingbird
import Logging
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferKeys
import OfferSigning

/// The one mapping of the application's errors to HTTP: for each error type an exhaustive switch over its codes, so a
/// new code does not compile until it has its API code and status here.
extension APIError {
    /// The API error of anything the application throws: the mapping the router (through ``ErrorMappingMiddleware``)
    /// and the event-loop path both use; anything unknown is logged by type and is 500 `internal`.
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

    /// Maps an error of the request pipeline (docs/api.md's table); every 503 and 429 says when to try again.
    public init(_ error: OfferServiceError) {
        let code: Code
        var retryAfter: String?
        switch error.code.kind {
        case .invalidRequest: code = .invalidRequest
        case .unknownApp: code = .unknownApp
        case .unknownProduct: code = .unknownProduct
        case .unknownOffer: code = .unknownOffer
        case .notEligible: code = .notEligible
        case .storeUnavailable: (code, retryAfter) = (.storeUnavailable, "1")
        case .issuerNotConfigured: (code, retryAfter) = (.issuerNotConfigured, "3600")
        case .unauthorized: code = .unauthorized
        case .customerMismatch: code = .customerMismatch
        case .transactionClaimed: code = .transactionClaimed
        case .unknownTransaction: code = .unknownTransaction
        case .invalidSignedPayload: code = .invalidSignedPayload
        case .noRetentionAnswer: code = .noRetentionAnswer
        case .requestIdentifierConflict: code = .requestIdentifierConflict
        case .retentionTimedOut: (code, retryAfter) = (.retentionTimedOut, "1")
        case .appStoreUnavailable: (code, retryAfter) = (.appStoreUnavailable, "5")
        // Nothing a retry fixes: the request needs configuration it lacks.
        case .appStoreNotConfigured: code = .appStoreAPINotConfigured
        // A signedTransaction this service cannot verify; retrying cannot help.
        case .appStoreDataNotConfigured: code = .appStoreDataNotConfigured
        case .unknownExperiment: code = .unknownExperiment
        case .invalidPolicy: code = .invalidPolicy
        case .policyConflict: code = .policyConflict
        case .dryRunRunning: (code, retryAfter) = (.dryRunRunning, "\(PolicyAdministration.dryRunRetryAfterSeconds)")
        case .dryRunNeedsFacts: code = .dryRunNeedsFacts
        case .noPolicy: code = .noPolicy
        case .policyNeedsStore: code = .policyNeedsStore
        }
        var headers: HTTPFields = [:]
        if let retryAfter { headers[.retryAfter] = retryAfter }
        self.init(code, error.message, field: error.field, reasons: error.reasons, headers: headers)
    }

    /// Maps an error of the signing core: a broken key is 500 `internal`, its message not returned.
    public init(_ error: OfferSigningError) {
        switch error.code.kind {
        case .invalidField: self.init(.invalidRequest, error.message, field: error.field)
        case .unknownKey: self.init(.unknownKey, error.message)
        case .noSigningKey: self.init(.noSigningKey, error.message)
        case .selfCheckFailed: self.init(.signatureSelfCheckFailed, error.message)
        case .invalidKey, .conflictingKey: self = .internal
        }
    }

    /// The API error of a signing error; an internal one (a failed self-check, a broken key) is logged — code
    /// and message, never key material.
    init(signing error: OfferSigningError, logger: Logger) {
        self.init(error)
        if status == .internalServerError {
            logger.error("signing failed", metadata: ["code": "\(error.code)", "message": "\(error.message)"])
        }
    }

    /// Maps a key-management failure: 404 `unknown_key`, 409 `key_state_conflict`, 422 `key_reload_failed`,
    /// 503 `store_unavailable` (with `Retry-After`).
    public init(_ error: KeyManagementError) {
        switch error.code.kind {
        case .unknownKey: self.init(.unknownKey, error.message)
        case .keyStateConflict: self.init(.keyStateConflict, error.message)
        case .keyReloadFailed: self.init(.keyReloadFailed, error.message)
        case .stateStoreUnavailable, .invalidKeyStates: self.init(.storeUnavailable, error.message, headers: [.retryAfter: "1"])
        }
    }

    /// Maps a policy that cannot be enforced to 400 `invalid_policy`, with the message `policy check` prints.
    public init(_ error: PolicyError) {
        switch error.code.kind {
        case .invalidPolicy: self.init(.invalidPolicy, error.message)
        }
    }

    /// Maps a Retention Messaging error: a value Apple would refuse 422, what Apple has or lacks 404/409 (and 409 when
    /// the App Store Server API is not configured), Apple refusing the service's token or answering badly 502, rate
    /// limits and outages 503 (with `Retry-After`).
    init(_ error: RetentionMessagingError) {
        let message = error.message
        let retryLater: HTTPFields = [.retryAfter: "60"]
        switch error.code.kind {
        case .invalidIdentifier: self.init(.invalidIdentifier, message)
        case .missingText: self.init(.missingText, message)
        case .headerTooLong: self.init(.headerTooLong, message)
        case .bodyTooLong: self.init(.bodyTooLong, message)
        case .altTextTooLong: self.init(.altTextTooLong, message)
        case .tooManyBulletPoints: self.init(.tooManyBulletPoints, message)
        case .bulletPointTextTooLong: self.init(.bulletPointTextTooLong, message)
        case .aboveImageRequiresImage: self.init(.aboveImageRequiresImage, message)
        case .imageNotAllowed: self.init(.imageNotAllowed, message)
        case .invalidImage: self.init(.invalidImage, message)
        case .invalidImageSize: self.init(.invalidImageSize, message)
        case .invalidLocale: self.init(.invalidLocale, message)
        case .invalidProductId: self.init(.invalidProductId, message)
        case .invalidRealtimeURL: self.init(.invalidRealtimeURL, message)
        case .invalidPerformanceTestRequest: self.init(.invalidPerformanceTestRequest, message)
        case .invalidRequest: self.init(.invalidRequest, message, status: .unprocessableContent)
        case .alreadyExists: self.init(.alreadyExists, message)
        case .notFound: self.init(.notFound, message)
        case .notApproved: self.init(.notApproved, message)
        case .imageInUse: self.init(.imageInUse, message)
        case .limitReached: self.init(.limitReached, message)
        case .noPassingTest: self.init(.noPassingTest, message)
        case .performanceTestInProgress: self.init(.performanceTestInProgress, message)
        // The App Store Server API is not configured for the app: like app_store_api_not_configured, no retry fixes it.
        case .invalidConfiguration: self.init(.invalidConfiguration, message)
        case .unauthorized: self.init(.unauthorized, message, status: .badGateway)
        case .invalidResponse: self.init(.invalidResponse, message)
        case .rateLimited: self.init(.rateLimited, message, headers: retryLater, status: .serviceUnavailable)
        case .appStoreUnavailable: self.init(.appStoreUnavailable, message, headers: retryLater)
        }
    }

    /// Maps a body that is not strict JSON (``StrictJSON``) to 400 `duplicate_key` (with the key as the field) or
    /// `malformed_json`, with what is wrong and where.
    init(_ violation: StrictJSON.Violation) {
        switch violation.kind {
        case .duplicateKey(let key): self.init(.duplicateKey, violation.message, field: key)
        case .malformed: self.init(.malformedJSON, violation.message)
        }
    }

    /// Maps a decoding failure of a request body (``DecodingProblem``, the one translator) to `malformed_json`, or
    /// `invalid_request` naming the field.
    public init(_ error: DecodingError) {
        let problem = DecodingProblem(error)
        switch problem.kind {
        case .notJSON, .unreadable:
            self = .malformedJSON
        case .null where problem.field.isEmpty, .wrongKind where problem.field.isEmpty:
            self.init(.invalidRequest, "The request body must be a JSON object.")
        case .missing, .null, .wrongKind, .notAccepted:
            self = .invalidRequest(field: problem.field, problem.message(reference: "GET /openapi.yaml"))
        }
    }

    /// Maps Hummingbird's own errors (no route, a body over the limit, a refusal a route threw as `HTTPError`).
    init(httpError: HTTPError) {
        switch httpError.status {
        case .notFound: self.init(.notFound, "No such endpoint; see GET /openapi.yaml or docs/api.md for the API.")
        case .methodNotAllowed: self.init(.methodNotAllowed, "This endpoint does not accept this method.")
        case .contentTooLarge: self.init(.payloadTooLarge, "The request body is too large.")
        case .badRequest: self.init(.invalidRequest, httpError.body ?? "The request is not valid.")
        case .unauthorized: self.init(.unauthorized, httpError.body ?? "Authentication is required.")
        case .forbidden: self.init(.forbidden, httpError.body ?? "Not allowed.")
        default:
            let status = httpError.status
            self.init(status.code >= 500 ? .internal : .invalidRequest, httpError.body ?? status.reasonPhrase, status: status)
        }
    }
}
