import HTTPTypes
import OfferErrors

extension APIError {
    /// The HTTP API's error codes: a closed set, each a case of ``Kind``, documented in docs/api.md (the admin
    /// Retention Messaging codes in docs/retention.md). A code cannot be made outside this file, and each has the
    /// status it is answered with (``status``).
    public struct Code: KindedErrorCode {
        /// Every code of the API: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidRequest = "invalid_request"
            case malformedJSON = "malformed_json"
            case duplicateKey = "duplicate_key"
            case malformedRequest = "malformed_request"
            case invalidSignedPayload = "invalid_signed_payload"
            case invalidPolicy = "invalid_policy"
            case unauthorized = "unauthorized"
            case forbidden = "forbidden"
            case customerMismatch = "customer_mismatch"
            case notEligible = "not_eligible"
            case csrf = "csrf"
            case unknownApp = "unknown_app"
            case unknownProduct = "unknown_product"
            case unknownOffer = "unknown_offer"
            case unknownKey = "unknown_key"
            case unknownTransaction = "unknown_transaction"
            case noRetentionAnswer = "no_retention_answer"
            case unknownExperiment = "unknown_experiment"
            case notFound = "not_found"
            case methodNotAllowed = "method_not_allowed"
            case transactionClaimed = "transaction_claimed"
            case appStoreAPINotConfigured = "app_store_api_not_configured"
            case requestIdentifierConflict = "request_identifier_conflict"
            case keyStateConflict = "key_state_conflict"
            case policyConflict = "policy_conflict"
            case noPolicy = "no_policy"
            case alreadyExists = "already_exists"
            case notApproved = "not_approved"
            case imageInUse = "image_in_use"
            case limitReached = "limit_reached"
            case noPassingTest = "no_passing_test"
            case performanceTestInProgress = "performance_test_in_progress"
            case invalidConfiguration = "invalid_configuration"
            case payloadTooLarge = "payload_too_large"
            case unsupportedMediaType = "unsupported_media_type"
            case keyReloadFailed = "key_reload_failed"
            case dryRunNeedsFacts = "dry_run_needs_facts"
            case appStoreDataNotConfigured = "app_store_data_not_configured"
            case policyNeedsStore = "policy_needs_store"
            case invalidIdentifier = "invalid_identifier"
            case missingText = "missing_text"
            case headerTooLong = "header_too_long"
            case bodyTooLong = "body_too_long"
            case altTextTooLong = "alt_text_too_long"
            case tooManyBulletPoints = "too_many_bullet_points"
            case bulletPointTextTooLong = "bullet_point_text_too_long"
            case aboveImageRequiresImage = "above_image_requires_image"
            case imageNotAllowed = "image_not_allowed"
            case invalidImage = "invalid_image"
            case invalidImageSize = "invalid_image_size"
            case invalidLocale = "invalid_locale"
            case invalidProductId = "invalid_product_id"
            case invalidRealtimeURL = "invalid_realtime_url"
            case invalidPerformanceTestRequest = "invalid_performance_test_request"
            case rateLimited = "rate_limited"
            case dryRunRunning = "dry_run_running"
            case `internal` = "internal"
            case signatureSelfCheckFailed = "signature_self_check_failed"
            case unsupportedTransferCoding = "unsupported_transfer_coding"
            case invalidResponse = "invalid_response"
            case noSigningKey = "no_signing_key"
            case issuerNotConfigured = "issuer_not_configured"
            case storeUnavailable = "store_unavailable"
            case retentionTimedOut = "retention_timed_out"
            case appStoreUnavailable = "app_store_unavailable"
            case serverBusy = "server_busy"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The status the code is answered with, unless its ``APIError`` says another.
        public var status: HTTPResponse.Status {
            switch kind {
            case .invalidRequest, .malformedJSON, .duplicateKey, .malformedRequest, .invalidSignedPayload, .invalidPolicy: .badRequest
            case .unauthorized: .unauthorized
            case .forbidden, .customerMismatch, .notEligible, .csrf: .forbidden
            case .unknownApp, .unknownProduct, .unknownOffer, .unknownKey, .unknownTransaction, .noRetentionAnswer, .unknownExperiment, .notFound:
                .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .transactionClaimed, .appStoreAPINotConfigured, .requestIdentifierConflict, .keyStateConflict, .policyConflict, .noPolicy,
                .alreadyExists, .notApproved, .imageInUse, .limitReached, .noPassingTest, .performanceTestInProgress, .invalidConfiguration:
                .conflict
            case .payloadTooLarge: .contentTooLarge
            case .unsupportedMediaType: .unsupportedMediaType
            case .keyReloadFailed, .dryRunNeedsFacts, .appStoreDataNotConfigured, .policyNeedsStore, .invalidIdentifier, .missingText, .headerTooLong,
                .bodyTooLong, .altTextTooLong, .tooManyBulletPoints, .bulletPointTextTooLong, .aboveImageRequiresImage, .imageNotAllowed,
                .invalidImage, .invalidImageSize, .invalidLocale, .invalidProductId, .invalidRealtimeURL, .invalidPerformanceTestRequest:
                .unprocessableContent
            case .rateLimited, .dryRunRunning: .tooManyRequests
            case .internal, .signatureSelfCheckFailed: .internalServerError
            case .unsupportedTransferCoding: .notImplemented
            case .invalidResponse: .badGateway
            case .noSigningKey, .issuerNotConfigured, .storeUnavailable, .retentionTimedOut, .appStoreUnavailable, .serverBusy: .serviceUnavailable
            }
        }

        /// A request field is missing or not acceptable (`field` names it).
        public static let invalidRequest = Self(.invalidRequest)

        /// The body is not valid JSON.
        public static let malformedJSON = Self(.malformedJSON)

        /// A JSON object names a key twice (`field` names it).
        public static let duplicateKey = Self(.duplicateKey)

        /// The request's HTTP/1.1 framing is broken.
        public static let malformedRequest = Self(.malformedRequest)

        /// An App Store notification or retention request that does not verify.
        public static let invalidSignedPayload = Self(.invalidSignedPayload)

        /// A policy that is not one this service can enforce (the message `policy check` prints).
        public static let invalidPolicy = Self(.invalidPolicy)

        /// No or a bad client credential, or no admin bearer token; with 502, Apple refused this service's token.
        public static let unauthorized = Self(.unauthorized)

        /// An admin token that is not one of the configured ones.
        public static let forbidden = Self(.forbidden)

        /// A login JWT or App Store data naming another customer.
        public static let customerMismatch = Self(.customerMismatch)

        /// The rules say no (`reasons` says why).
        public static let notEligible = Self(.notEligible)

        /// A console form without the session's CSRF token.
        public static let csrf = Self(.csrf)

        /// The app is not served.
        public static let unknownApp = Self(.unknownApp)

        /// The policy lists no such product.
        public static let unknownProduct = Self(.unknownProduct)

        /// The policy lists no such offer.
        public static let unknownOffer = Self(.unknownOffer)

        /// No key with this key identifier is loaded.
        public static let unknownKey = Self(.unknownKey)

        /// Nothing links the transaction to a customer.
        public static let unknownTransaction = Self(.unknownTransaction)

        /// The policy has no retention answer for the product.
        public static let noRetentionAnswer = Self(.noRetentionAnswer)

        /// The policy in force has no experiment by that id.
        public static let unknownExperiment = Self(.unknownExperiment)

        /// No such endpoint, or Apple does not know what was asked for.
        public static let notFound = Self(.notFound)

        /// A known path with another method (with `Allow`), or `CONNECT`.
        public static let methodNotAllowed = Self(.methodNotAllowed)

        /// Another customer owns this original transaction.
        public static let transactionClaimed = Self(.transactionClaimed)

        /// An App Store refresh for an app without an App Store Server API key.
        public static let appStoreAPINotConfigured = Self(.appStoreAPINotConfigured)

        /// A retention request reusing a `requestIdentifier` answered for another request.
        public static let requestIdentifierConflict = Self(.requestIdentifierConflict)

        /// A key change that contradicts the current states (revoking the active key).
        public static let keyStateConflict = Self(.keyStateConflict)

        /// Policies applied at the same time kept winning the revision this one wanted.
        public static let policyConflict = Self(.policyConflict)

        /// The service has no policy, so no retention catalogue.
        public static let noPolicy = Self(.noPolicy)

        /// ``RetentionMessagingError/Code/alreadyExists``.
        public static let alreadyExists = Self(.alreadyExists)

        /// ``RetentionMessagingError/Code/notApproved``.
        public static let notApproved = Self(.notApproved)

        /// ``RetentionMessagingError/Code/imageInUse``.
        public static let imageInUse = Self(.imageInUse)

        /// ``RetentionMessagingError/Code/limitReached``.
        public static let limitReached = Self(.limitReached)

        /// ``RetentionMessagingError/Code/noPassingTest``.
        public static let noPassingTest = Self(.noPassingTest)

        /// ``RetentionMessagingError/Code/performanceTestInProgress``.
        public static let performanceTestInProgress = Self(.performanceTestInProgress)

        /// The App Store Server API is not configured for the app: a retry cannot help.
        public static let invalidConfiguration = Self(.invalidConfiguration)

        /// The request body is too large.
        public static let payloadTooLarge = Self(.payloadTooLarge)

        /// The body is not declared as JSON.
        public static let unsupportedMediaType = Self(.unsupportedMediaType)

        /// The new key set was rejected; the old one serves.
        public static let keyReloadFailed = Self(.keyReloadFailed)

        /// A policy dry-run needs facts the decision log did not keep.
        public static let dryRunNeedsFacts = Self(.dryRunNeedsFacts)

        /// A `signedTransaction` sent to a service that cannot verify App Store data.
        public static let appStoreDataNotConfigured = Self(.appStoreDataNotConfigured)

        /// Applying a policy at run time needs the customer store.
        public static let policyNeedsStore = Self(.policyNeedsStore)

        /// ``RetentionMessagingError/Code/invalidIdentifier``.
        public static let invalidIdentifier = Self(.invalidIdentifier)

        /// ``RetentionMessagingError/Code/missingText``.
        public static let missingText = Self(.missingText)

        /// ``RetentionMessagingError/Code/headerTooLong``.
        public static let headerTooLong = Self(.headerTooLong)

        /// ``RetentionMessagingError/Code/bodyTooLong``.
        public static let bodyTooLong = Self(.bodyTooLong)

        /// ``RetentionMessagingError/Code/altTextTooLong``.
        public static let altTextTooLong = Self(.altTextTooLong)

        /// ``RetentionMessagingError/Code/tooManyBulletPoints``.
        public static let tooManyBulletPoints = Self(.tooManyBulletPoints)

        /// ``RetentionMessagingError/Code/bulletPointTextTooLong``.
        public static let bulletPointTextTooLong = Self(.bulletPointTextTooLong)

        /// ``RetentionMessagingError/Code/aboveImageRequiresImage``.
        public static let aboveImageRequiresImage = Self(.aboveImageRequiresImage)

        /// ``RetentionMessagingError/Code/imageNotAllowed``.
        public static let imageNotAllowed = Self(.imageNotAllowed)

        /// ``RetentionMessagingError/Code/invalidImage``.
        public static let invalidImage = Self(.invalidImage)

        /// ``RetentionMessagingError/Code/invalidImageSize``.
        public static let invalidImageSize = Self(.invalidImageSize)

        /// ``RetentionMessagingError/Code/invalidLocale``.
        public static let invalidLocale = Self(.invalidLocale)

        /// ``RetentionMessagingError/Code/invalidProductId``.
        public static let invalidProductId = Self(.invalidProductId)

        /// ``RetentionMessagingError/Code/invalidRealtimeURL``.
        public static let invalidRealtimeURL = Self(.invalidRealtimeURL)

        /// ``RetentionMessagingError/Code/invalidPerformanceTestRequest``.
        public static let invalidPerformanceTestRequest = Self(.invalidPerformanceTestRequest)

        /// Over a rate limit (with `Retry-After`); with 503, Apple's rate limit.
        public static let rateLimited = Self(.rateLimited)

        /// A policy dry-run is already replaying on this replica.
        public static let dryRunRunning = Self(.dryRunRunning)

        /// An internal error; details are logged, never returned.
        public static let `internal` = Self(.internal)

        /// A signature made by the service did not verify.
        public static let signatureSelfCheckFailed = Self(.signatureSelfCheckFailed)

        /// A transfer coding other than `chunked`.
        public static let unsupportedTransferCoding = Self(.unsupportedTransferCoding)

        /// Apple's answer could not be read.
        public static let invalidResponse = Self(.invalidResponse)

        /// There is no key that may sign new offers.
        public static let noSigningKey = Self(.noSigningKey)

        /// JWS signatures need the app's issuer ID, which is not configured.
        public static let issuerNotConfigured = Self(.issuerNotConfigured)

        /// The database did not answer in time or is known to be down.
        public static let storeUnavailable = Self(.storeUnavailable)

        /// A retention request was not decided within the deadline.
        public static let retentionTimedOut = Self(.retentionTimedOut)

        /// The App Store could not be asked in time.
        public static let appStoreUnavailable = Self(.appStoreUnavailable)

        /// Incomplete request bodies of all connections hold too much.
        public static let serverBusy = Self(.serverBusy)
    }
}
