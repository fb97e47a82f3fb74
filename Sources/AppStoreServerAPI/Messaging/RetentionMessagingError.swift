import Foundation
import OfferErrors

/// Why a call of Apple's Retention Messaging API did not do what was asked: a value this client refused before
/// sending it, or Apple's answer.
///
/// The same code whether the client caught the problem or Apple did (a header of 67 characters is
/// ``Code/headerTooLong`` either way), so callers and tests compare ``code`` only. ``appleErrorCode`` keeps Apple's
/// numeric code (`4090000`, …) when Apple sent one. Messages are plain words: no token, key or Swift type name.
public struct RetentionMessagingError: CodedError, Hashable, Sendable {
    /// What kind of failure this is.
    public let code: Code

    /// A human-readable explanation.
    public let message: String

    /// Apple's `errorCode` from the answer's body, `nil` when the client refused the value itself or Apple sent none.
    public let appleErrorCode: Int64?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - message: A human-readable explanation, without secrets.
    ///   - appleErrorCode: Apple's numeric error code, if the answer carried one.
    public init(_ code: Code, _ message: String, appleErrorCode: Int64? = nil) {
        self.code = code
        self.message = message
        self.appleErrorCode = appleErrorCode
    }
}

extension RetentionMessagingError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
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
            case alreadyExists = "already_exists"
            case notFound = "not_found"
            case notApproved = "not_approved"
            case imageInUse = "image_in_use"
            case limitReached = "limit_reached"
            case noPassingTest = "no_passing_test"
            case performanceTestInProgress = "performance_test_in_progress"
            case invalidPerformanceTestRequest = "invalid_performance_test_request"
            case invalidRequest = "invalid_request"
            case unauthorized = "unauthorized"
            case rateLimited = "rate_limited"
            case appStoreUnavailable = "app_store_unavailable"
            case invalidResponse = "invalid_response"
            case invalidConfiguration = "invalid_configuration"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// An image or message identifier is not a UUID.
        public static let invalidIdentifier = Self(.invalidIdentifier)

        /// A message has no header or no body (Apple requires both).
        public static let missingText = Self(.missingText)

        /// The header is longer than 66 characters (Apple: `HeaderTooLongError`, 4000162).
        public static let headerTooLong = Self(.headerTooLong)

        /// The body is longer than 144 characters (Apple: `BodyTooLongError`, 4000163).
        public static let bodyTooLong = Self(.bodyTooLong)

        /// An image's alternative text is longer than 150 characters (Apple: `AltTextTooLongError`, 4000175).
        public static let altTextTooLong = Self(.altTextTooLong)

        /// More than 5 bullet points (Apple: `BadRequestTooManyBulletPointsError`, 4000218).
        public static let tooManyBulletPoints = Self(.tooManyBulletPoints)

        /// A bullet point's text is longer than 66 characters (Apple: `BadRequestBulletPointTextTooLongError`, 4000219).
        public static let bulletPointTextTooLong = Self(.bulletPointTextTooLong)

        /// `headerPosition` `ABOVE_IMAGE` without an image (Apple: `BadRequestAboveImageRequiresAnImageError`, 4000224).
        public static let aboveImageRequiresImage = Self(.aboveImageRequiresImage)

        /// A message meant for a promotional offer or a switch plan carries an image or bullet points.
        public static let imageNotAllowed = Self(.imageNotAllowed)

        /// The image is not a PNG Apple accepts: not a PNG, transparent, or not of its size class's dimensions (Apple:
        /// `InvalidImageError`, 4000161).
        public static let invalidImage = Self(.invalidImage)

        /// A message uses an image of the wrong size class (Apple: `BadRequestImageSizeError`, 4000216).
        public static let invalidImageSize = Self(.invalidImageSize)

        /// The locale is not one Apple accepts (Apple: `InvalidLocaleError`, 4000164).
        public static let invalidLocale = Self(.invalidLocale)

        /// The product identifier is not valid (Apple: `InvalidProductIdError`, 4000023).
        public static let invalidProductId = Self(.invalidProductId)

        /// The real-time URL is not an `https://` URL of at most 256 characters (Apple: `BadRequestRealtimeUrlError`,
        /// 4000215).
        public static let invalidRealtimeURL = Self(.invalidRealtimeURL)

        /// The identifier is already used: uploads are not idempotent (Apple: `ImageAlreadyExistsError` 4090000,
        /// `MessageAlreadyExistsError` 4090001).
        public static let alreadyExists = Self(.alreadyExists)

        /// Apple does not know the image, message, default message, real-time URL or performance test (HTTP 404).
        public static let notFound = Self(.notFound)

        /// The message or its image is not approved yet, so it cannot be a default message (Apple:
        /// `MessageNotApprovedError` 4030017, `ImageNotApprovedError` 4030018).
        public static let notApproved = Self(.notApproved)

        /// The image is used by a message and cannot be deleted (Apple: `ImageInUseError`, 4030019).
        public static let imageInUse = Self(.imageInUse)

        /// The app has the most images or messages Apple keeps, 2,000 each (Apple: 4030014, 4030016).
        public static let limitReached = Self(.limitReached)

        /// Production's real-time URL needs a passed Sandbox performance test first (Apple:
        /// `ForbiddenNoPassingTestError`, 4030026).
        public static let noPassingTest = Self(.noPassingTest)

        /// A performance test is already running (Apple: `ExistingPerformanceTestRunError`, 4000213).
        public static let performanceTestInProgress = Self(.performanceTestInProgress)

        /// Apple refused the performance test's transaction: not a Sandbox original transaction of an active
        /// auto-renewable subscription (Apple: 4000211 and the transaction identifier errors).
        public static let invalidPerformanceTestRequest = Self(.invalidPerformanceTestRequest)

        /// Apple refused the request as malformed, for a reason not listed above (another HTTP 400).
        public static let invalidRequest = Self(.invalidRequest)

        /// Apple refused the authentication token (HTTP 401).
        public static let unauthorized = Self(.unauthorized)

        /// Apple's rate limit (HTTP 429) asks to wait longer than this client waits.
        public static let rateLimited = Self(.rateLimited)

        /// Apple did not answer in time, answered with a server error, or could not be reached.
        public static let appStoreUnavailable = Self(.appStoreUnavailable)

        /// Apple's answer could not be read.
        public static let invalidResponse = Self(.invalidResponse)

        /// The client's configuration is unusable (thrown by the initialiser).
        public static let invalidConfiguration = Self(.invalidConfiguration)
    }
}

extension RetentionMessagingError {
    /// Apple's documented Retention Messaging error codes and what each becomes
    /// ([Error codes](https://developer.apple.com/documentation/retentionmessaging/error-codes)).
    static let appleCodes: [Int64: Code] = [
        4_000_006: .invalidPerformanceTestRequest,  // InvalidTransactionIdError (the test's transaction)
        4_000_023: .invalidProductId,
        4_000_161: .invalidImage,
        4_000_162: .headerTooLong,
        4_000_163: .bodyTooLong,
        4_000_164: .invalidLocale,
        4_000_175: .altTextTooLong,
        4_000_185: .invalidPerformanceTestRequest,  // a Family Sharing transaction
        4_000_187: .invalidPerformanceTestRequest,  // not an original transaction identifier
        4_000_211: .invalidPerformanceTestRequest,
        4_000_212: .invalidRequest,  // InvalidRequestIdError
        4_000_213: .performanceTestInProgress,
        4_000_215: .invalidRealtimeURL,
        4_000_216: .invalidImageSize,
        4_000_218: .tooManyBulletPoints,
        4_000_219: .bulletPointTextTooLong,
        4_000_224: .aboveImageRequiresImage,
        4_030_014: .limitReached,
        4_030_016: .limitReached,
        4_030_017: .notApproved,
        4_030_018: .notApproved,
        4_030_019: .imageInUse,
        4_030_026: .noPassingTest,
        4_040_014: .notFound,
        4_040_015: .notFound,
        4_040_018: .notFound,
        4_040_020: .notFound,
        4_040_021: .notFound,
        4_090_000: .alreadyExists,
        4_090_001: .alreadyExists,
    ]

    /// What Apple's HTTP status and error code mean, in words.
    static func fromApple(status: Int, errorCode: Int64?) -> RetentionMessagingError {
        let code = errorCode.flatMap { appleCodes[$0] }
        let suffix = errorCode.map { " (Apple's error \($0))" } ?? " (HTTP \(status))"
        let message: String
        switch code {
        case .invalidProductId?: message = "Apple says the product identifier is not valid"
        case .invalidImage?: message = "Apple refused the image: it must be a PNG without transparency, of its size class's dimensions"
        case .headerTooLong?: message = "Apple says the header is too long"
        case .bodyTooLong?: message = "Apple says the body is too long"
        case .invalidLocale?: message = "Apple says the locale is not valid"
        case .altTextTooLong?: message = "Apple says an alternative text is too long"
        case .invalidPerformanceTestRequest?:
            message =
                """
                Apple refused the performance test: give the original transaction identifier of an active auto-renewable subscription bought in \
                Sandbox
                """
        case .performanceTestInProgress?: message = "a performance test is already running: poll its result, or wait for it to end"
        case .invalidRealtimeURL?: message = "Apple refused the real-time URL: it must start with https:// and be at most 256 characters"
        case .invalidImageSize?: message = "Apple says an image of the message is of the wrong size class"
        case .tooManyBulletPoints?: message = "Apple says the message has too many bullet points"
        case .bulletPointTextTooLong?: message = "Apple says a bullet point's text is too long"
        case .aboveImageRequiresImage?: message = "Apple says a header above the image needs an image"
        case .limitReached?: message = "the app has the most images or messages Apple keeps (2,000): delete some first"
        case .notApproved?: message = "the message or its image is not approved yet, so it cannot be a default message"
        case .imageInUse?: message = "the image is used by a message: delete the message first"
        case .noPassingTest?:
            message = "Production's real-time URL needs a passed Sandbox performance test first: run the performance test in Sandbox"
        case .notFound?: message = "Apple does not know it"
        case .alreadyExists?:
            message = "the identifier is already used (uploads are not idempotent): upload under a new identifier, or delete the old one first"
        default:
            switch status {
            case 404:
                return RetentionMessagingError(
                    .notFound,
                    "Apple does not know it, or the account has no access to the Retention Messaging API" + suffix,
                    appleErrorCode: errorCode
                )
            case 403: return RetentionMessagingError(.invalidRequest, "Apple refused the request as forbidden" + suffix, appleErrorCode: errorCode)
            case 409: return RetentionMessagingError(.alreadyExists, "Apple says it already exists" + suffix, appleErrorCode: errorCode)
            default: return RetentionMessagingError(.invalidRequest, "Apple refused the request as malformed" + suffix, appleErrorCode: errorCode)
            }
        }
        return RetentionMessagingError(code ?? .invalidRequest, message + suffix, appleErrorCode: errorCode)
    }
}
