public import AppStoreNotifications
public import AsyncHTTPClient
import Foundation
public import Logging
import NIOCore
import NIOHTTP1

/// Apple's Retention Messaging API (`/inApps/v1/messaging/…` on the App Store Server API hosts) for one app in one
/// environment: images, messages, default messages, the real-time URL and the performance test.
///
/// - Authentication: the App Store Server API's ES256 token (the same In-App Purchase key, key ID, issuer ID and
///   bundle ID as ``AppStoreServerAPIClient``), reused until it nears expiry; never logged.
/// - Values are checked before anything is sent, against every limit Apple documents (``RetentionMessagingLimits``):
///   identifiers are UUIDs; header ≤ 66, body ≤ 144, alternative text ≤ 150 characters; ≤ 5 bullet points of ≤ 66
///   characters; `ABOVE_IMAGE` only with an image; images are PNGs without transparency, full size 3840 × 160–2160 px,
///   bullet points 1024 × 1024 px; the real-time URL `https://` and ≤ 256 characters.
/// - Rate limits: Apple allows 1 request a second per endpoint and app in Production (10 for Configure Default
///   Message), a tenth of that in Sandbox; this client keeps to them with a token bucket per endpoint
///   (``Options/rateLimit``), and waits as a 429's `Retry-After` says, up to ``Options/maximumRetryAfter``.
/// - Uploads are not idempotent: Apple answers 409 for an identifier already used (``RetentionMessagingError/Code/alreadyExists``),
///   and an upload is never sent twice after an answer that may have stored it.
/// - The performance test runs in Sandbox only: ``startPerformanceTest(originalTransactionId:)`` and
///   ``performanceTestResult(requestId:)`` always go to the Sandbox host, whatever this client's environment.
///
/// ## Usage
///
/// ```swift
/// let sandbox = try RetentionMessagingClient(configuration: configuration, environment: .sandbox)
/// try await sandbox.uploadImage(identifier: imageId, png: pngBytes, size: .fullSize)
/// try await sandbox.uploadMessage(identifier: messageId, message: RetentionMessage(
///     header: "Before you go", body: "Keep your plan for half price for 3 months.",
///     image: RetentionMessageImage(imageIdentifier: imageId, altText: "A happy customer")))
/// try await sandbox.configureDefaultMessage(productId: "com.example.monthly", locale: "en-US", messageIdentifier: messageId)
/// try await sandbox.configureRealtimeURL("https://offers.example.com/v1/retention/appstore")
/// let started = try await sandbox.startPerformanceTest(originalTransactionId: "2000000123456789")
/// let result = try await sandbox.waitForPerformanceTest(requestId: started.requestId ?? "")
/// if result.result == .pass {
///     let production = try RetentionMessagingClient(configuration: configuration, environment: .production)
///     try await production.configureRealtimeURL("https://offers.example.com/v1/retention/appstore")
/// }
/// ```
public final class RetentionMessagingClient: Sendable {
    /// The environment this client configures.
    public let environment: AppStoreEnvironment
    let requester: MessagingRequester
    let options: Options

    /// How a client waits and how long.
    public struct Options: Sendable, Hashable {
        /// The budget of one call, rate-limit waits, `Retry-After` and retries included. Default 60 s.
        public var timeout: Duration
        /// The longest `Retry-After` honoured; a longer one fails the call as ``RetentionMessagingError/Code/rateLimited``.
        /// Default 60 s.
        public var maximumRetryAfter: Duration
        /// Attempts per call, the first included. Default 4.
        public var maximumAttempts: Int
        /// This client's own request rate (Apple's documented limits by default; a non-positive rate turns the
        /// bucket off).
        public var rateLimit: RateLimit
        /// The largest answer read. Default 4 MiB (a list of 2,000 items is well under 1 MiB).
        public var maximumResponseBytes: Int

        /// The defaults described on each property.
        public init(
            timeout: Duration = .seconds(60),
            maximumRetryAfter: Duration = .seconds(60),
            maximumAttempts: Int = 4,
            rateLimit: RateLimit = RateLimit(),
            maximumResponseBytes: Int = 4 << 20
        ) {
            self.timeout = timeout
            self.maximumRetryAfter = maximumRetryAfter
            self.maximumAttempts = maximumAttempts
            self.rateLimit = rateLimit
            self.maximumResponseBytes = maximumResponseBytes
        }
    }

    /// Requests a second per endpoint (*Identifying rate limits*: Production 1, Configure Default Message 10;
    /// Sandbox 10 % of Production).
    public struct RateLimit: Sendable, Hashable {
        /// Every endpoint but Configure Default Message, in Production. Default 1.
        public var productionPerSecond: Double
        /// Configure Default Message in Production. Default 10.
        public var productionDefaultsPerSecond: Double
        /// Sandbox's share of Production's rates. Default 0.1.
        public var sandboxShare: Double

        /// Apple's documented limits.
        public init(productionPerSecond: Double = 1, productionDefaultsPerSecond: Double = 10, sandboxShare: Double = 0.1) {
            self.productionPerSecond = productionPerSecond
            self.productionDefaultsPerSecond = productionDefaultsPerSecond
            self.sandboxShare = sandboxShare
        }

        /// No client-side limit (tests; a proxy that limits by itself).
        public static let off = RateLimit(productionPerSecond: 0, productionDefaultsPerSecond: 0, sandboxShare: 0)
    }

    /// Creates a client for one app and environment.
    ///
    /// - Parameters:
    ///   - configuration: The App Store Server API's configuration: key, key ID, issuer ID, bundle ID, base URLs and
    ///     retry backoff (its environments, timeout and cache are not used here).
    ///   - environment: ``AppStoreEnvironment/production`` or ``AppStoreEnvironment/sandbox``.
    ///   - options: Budgets and rates.
    ///   - httpClient: The HTTP client; default the shared one.
    ///   - logger: Where to log; lines carry no token or key.
    /// - Throws: ``RetentionMessagingError/Code/invalidConfiguration``.
    public init(
        configuration: AppStoreServerAPIConfiguration,
        environment: AppStoreEnvironment,
        options: Options = Options(),
        httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "offer-signer.retention-messaging")
    ) throws(RetentionMessagingError) {
        guard environment == .production || environment == .sandbox else {
            throw RetentionMessagingError(.invalidConfiguration, "the Retention Messaging API has a Production and a Sandbox environment only")
        }
        guard options.timeout > .zero, options.maximumResponseBytes > 0 else {
            throw RetentionMessagingError(.invalidConfiguration, "the call budget and the answer size limit must be positive")
        }
        let tokens: BearerTokenProvider
        do {
            tokens = try BearerTokenProvider(configuration: configuration)
        } catch {
            throw RetentionMessagingError(.invalidConfiguration, error.message)
        }
        let rate = options.rateLimit
        self.environment = environment
        self.options = options
        self.requester = MessagingRequester(
            baseURLs: configuration.baseURLs,
            options: options,
            retry: configuration.retry,
            httpClient: httpClient,
            tokens: tokens,
            limiter: RateLimiter(
                .init(productionPerSecond: rate.productionPerSecond, sandboxPerSecond: rate.productionPerSecond * rate.sandboxShare)
            ),
            defaultsLimiter: RateLimiter(
                .init(
                    productionPerSecond: rate.productionDefaultsPerSecond,
                    sandboxPerSecond: rate.productionDefaultsPerSecond * rate.sandboxShare
                )
            ),
            logger: logger
        )
    }

    // MARK: - Images

    /// Upload Image: `PUT /inApps/v1/messaging/image/{imageIdentifier}?imageSize=…`, the PNG as the body.
    ///
    /// Not idempotent: an identifier already used fails with ``RetentionMessagingError/Code/alreadyExists``. The image
    /// is `PENDING` until Apple approves it (Sandbox approves at once).
    ///
    /// - Parameters:
    ///   - identifier: A UUID of your choice.
    ///   - png: The PNG file.
    ///   - size: Its size class; the dimensions are checked against it.
    /// - Throws: ``RetentionMessagingError``.
    public func uploadImage(identifier: String, png: [UInt8], size: RetentionImageSize) async throws(RetentionMessagingError) {
        let id = try RetentionMessagingLimits.identifier(identifier, of: "image")
        try RetentionMessagingLimits.check(png: png, size: size)
        _ = try await requester.send(
            .PUT,
            .messagingUploadImage,
            path: "/inApps/v1/messaging/image/\(id)",
            query: [("imageSize", size.rawValue)],
            body: .png(ByteBuffer(bytes: png)),
            environment: environment,
            idempotent: false
        )
    }

    /// Delete Image: `DELETE /inApps/v1/messaging/image/{imageIdentifier}`.
    ///
    /// - Throws: ``RetentionMessagingError``: ``RetentionMessagingError/Code/notFound``,
    ///   ``RetentionMessagingError/Code/imageInUse``, …
    public func deleteImage(identifier: String) async throws(RetentionMessagingError) {
        let id = try RetentionMessagingLimits.identifier(identifier, of: "image")
        _ = try await requester.send(
            .DELETE,
            .messagingDeleteImage,
            path: "/inApps/v1/messaging/image/\(id)",
            environment: environment,
            idempotent: true
        )
    }

    /// Get Image List: `GET /inApps/v1/messaging/image/list`.
    ///
    /// - Returns: Every image's identifier, state and size class.
    public func images() async throws(RetentionMessagingError) -> [RetentionImageListItem] {
        let body = try await requester.send(
            .GET,
            .messagingImageList,
            path: "/inApps/v1/messaging/image/list",
            environment: environment,
            idempotent: true
        )
        return try decode(RetentionImageList.self, from: body).imageIdentifiers ?? []
    }

    // MARK: - Messages

    /// Upload Message: `PUT /inApps/v1/messaging/message/{messageIdentifier}` with an `UploadMessageRequestBody`.
    ///
    /// Not idempotent: an identifier already used fails with ``RetentionMessagingError/Code/alreadyExists``. The
    /// message is `PENDING` until Apple approves it (Sandbox approves at once).
    ///
    /// - Parameters:
    ///   - identifier: A UUID of your choice.
    ///   - message: The message, checked against every limit first.
    ///   - textOnly: `false` for a message shown with a promotional offer or an alternate product: then it may carry
    ///     no image and no bullet points. Default `true`.
    /// - Throws: ``RetentionMessagingError``.
    public func uploadMessage(identifier: String, message: RetentionMessage, textOnly: Bool = true) async throws(RetentionMessagingError) {
        let id = try RetentionMessagingLimits.identifier(identifier, of: "message")
        try RetentionMessagingLimits.check(message, textOnly: textOnly)
        var sent = message
        if let image = sent.image { sent.image?.imageIdentifier = image.imageIdentifier.lowercased() }
        sent.bulletPoints = sent.bulletPoints.map {
            $0.map { RetentionBulletPoint(text: $0.text, imageIdentifier: $0.imageIdentifier.lowercased(), altText: $0.altText) }
        }
        _ = try await requester.send(
            .PUT,
            .messagingUploadMessage,
            path: "/inApps/v1/messaging/message/\(id)",
            body: .json(try encode(sent)),
            environment: environment,
            idempotent: false
        )
    }

    /// Delete Message: `DELETE /inApps/v1/messaging/message/{messageIdentifier}`.
    public func deleteMessage(identifier: String) async throws(RetentionMessagingError) {
        let id = try RetentionMessagingLimits.identifier(identifier, of: "message")
        _ = try await requester.send(
            .DELETE,
            .messagingDeleteMessage,
            path: "/inApps/v1/messaging/message/\(id)",
            environment: environment,
            idempotent: true
        )
    }

    /// Get Message List: `GET /inApps/v1/messaging/message/list`.
    ///
    /// - Returns: Every message's identifier and state.
    public func messages() async throws(RetentionMessagingError) -> [RetentionMessageListItem] {
        let body = try await requester.send(
            .GET,
            .messagingMessageList,
            path: "/inApps/v1/messaging/message/list",
            environment: environment,
            idempotent: true
        )
        return try decode(RetentionMessageList.self, from: body).messageIdentifiers ?? []
    }

    // MARK: - Default messages

    /// Configure Default Message: `PUT /inApps/v1/messaging/default/{productId}/{locale}` (idempotent: replaces the
    /// product's default for the locale).
    ///
    /// - Throws: ``RetentionMessagingError``: ``RetentionMessagingError/Code/notApproved`` while the message or its
    ///   image is not approved, ``RetentionMessagingError/Code/notFound`` for an unknown message, …
    public func configureDefaultMessage(productId: String, locale: String, messageIdentifier: String) async throws(RetentionMessagingError) {
        let path = try defaultPath(productId: productId, locale: locale)
        let id = try RetentionMessagingLimits.identifier(messageIdentifier, of: "message")
        _ = try await requester.send(
            .PUT,
            .messagingConfigureDefault,
            path: path,
            body: .json(try encode(RetentionDefaultConfiguration(messageIdentifier: id))),
            environment: environment,
            idempotent: true
        )
    }

    /// Get Default Message: `GET /inApps/v1/messaging/default/{productId}/{locale}`.
    ///
    /// - Returns: The default message's identifier, `nil` when none is configured (Apple's 404
    ///   `DefaultMessageNotFoundError`).
    public func defaultMessage(productId: String, locale: String) async throws(RetentionMessagingError) -> String? {
        let path = try defaultPath(productId: productId, locale: locale)
        do {
            let body = try await requester.send(.GET, .messagingGetDefault, path: path, environment: environment, idempotent: true)
            return try decode(RetentionDefaultConfiguration.self, from: body).messageIdentifier
        } catch  where error.code == .notFound && error.appleErrorCode == 4_040_020 {
            return nil
        }
    }

    /// Delete Default Message: `DELETE /inApps/v1/messaging/default/{productId}/{locale}` (idempotent).
    public func deleteDefaultMessage(productId: String, locale: String) async throws(RetentionMessagingError) {
        let path = try defaultPath(productId: productId, locale: locale)
        _ = try await requester.send(.DELETE, .messagingDeleteDefault, path: path, environment: environment, idempotent: true)
    }

    // MARK: - The real-time URL

    /// Configure Realtime URL: `PUT /inApps/v1/messaging/realtime/url` with a `RealtimeUrlRequest`.
    ///
    /// - Throws: ``RetentionMessagingError``: in Production, ``RetentionMessagingError/Code/noPassingTest`` until a
    ///   Sandbox performance test has passed; ``RetentionMessagingError/Code/invalidRealtimeURL``.
    public func configureRealtimeURL(_ url: String) async throws(RetentionMessagingError) {
        let checked = try RetentionMessagingLimits.realtimeURL(url)
        _ = try await requester.send(
            .PUT,
            .messagingConfigureRealtimeURL,
            path: "/inApps/v1/messaging/realtime/url",
            body: .json(try encode(RetentionRealtimeURL(realtimeURL: checked))),
            environment: environment,
            idempotent: true
        )
    }

    /// Get Realtime URL: `GET /inApps/v1/messaging/realtime/url`.
    ///
    /// - Returns: The configured URL, `nil` when none is (Apple's 404 `RealtimeUrlNotFoundError`).
    public func realtimeURL() async throws(RetentionMessagingError) -> String? {
        do {
            let body = try await requester.send(
                .GET,
                .messagingGetRealtimeURL,
                path: "/inApps/v1/messaging/realtime/url",
                environment: environment,
                idempotent: true
            )
            return try decode(RetentionRealtimeURL.self, from: body).realtimeURL
        } catch  where error.code == .notFound && error.appleErrorCode == 4_040_021 {
            return nil
        }
    }

    /// Delete Realtime URL: `DELETE /inApps/v1/messaging/realtime/url`.
    public func deleteRealtimeURL() async throws(RetentionMessagingError) {
        _ = try await requester.send(
            .DELETE,
            .messagingDeleteRealtimeURL,
            path: "/inApps/v1/messaging/realtime/url",
            environment: environment,
            idempotent: true
        )
    }

    // MARK: - The performance test (Sandbox)

    /// Initiate Performance Test: `POST /inApps/v1/messaging/performanceTest` on the **Sandbox** host.
    ///
    /// Apple sends its requests to the Sandbox real-time URL, for the given transaction.
    ///
    /// - Parameter originalTransactionId: The original transaction identifier of an active auto-renewable
    ///   subscription bought in Sandbox (decimal digits).
    /// - Returns: The test's `requestId` and configuration.
    /// - Throws: ``RetentionMessagingError``: ``RetentionMessagingError/Code/performanceTestInProgress``,
    ///   ``RetentionMessagingError/Code/invalidPerformanceTestRequest``, …
    public func startPerformanceTest(originalTransactionId: String) async throws(RetentionMessagingError) -> RetentionPerformanceTestStarted {
        guard (1...32).contains(originalTransactionId.utf8.count),
            originalTransactionId.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            throw RetentionMessagingError(.invalidPerformanceTestRequest, "the original transaction identifier must be 1 to 32 decimal digits")
        }
        // Not idempotent either: a second start while the first runs answers ExistingPerformanceTestRunError.
        let body = try await requester.send(
            .POST,
            .messagingStartPerformanceTest,
            path: "/inApps/v1/messaging/performanceTest",
            body: .json(try encode(RetentionPerformanceTestRequest(originalTransactionId: originalTransactionId))),
            environment: .sandbox,
            idempotent: false
        )
        let started = try decode(RetentionPerformanceTestStarted.self, from: body)
        guard let requestId = started.requestId, Self.isRequestId(requestId) else {
            throw RetentionMessagingError(.invalidResponse, "the App Store's answer names no usable performance test identifier")
        }
        return started
    }

    /// Get Performance Test Results: `GET /inApps/v1/messaging/performanceTest/result/{requestId}` on the Sandbox host.
    ///
    /// - Returns: The result so far: `PENDING` while the test runs, then `PASS` or `FAIL`.
    public func performanceTestResult(requestId: String) async throws(RetentionMessagingError) -> RetentionPerformanceTestResult {
        guard Self.isRequestId(requestId) else {
            throw RetentionMessagingError(.invalidRequest, "the performance test identifier must be 1 to 128 letters, digits, hyphens or underscores")
        }
        let body = try await requester.send(
            .GET,
            .messagingPerformanceTestResult,
            path: "/inApps/v1/messaging/performanceTest/result/\(requestId)",
            environment: .sandbox,
            idempotent: true
        )
        return try decode(RetentionPerformanceTestResult.self, from: body)
    }

    /// Polls ``performanceTestResult(requestId:)`` until the test is no longer `PENDING`.
    ///
    /// - Parameters:
    ///   - requestId: The started test's identifier.
    ///   - interval: The wait between two polls; default 15 s (Sandbox allows one request every 10 s).
    ///   - timeout: How long to poll at most; default 1 hour.
    ///   - progress: Called with each `PENDING` result.
    /// - Returns: The `PASS` or `FAIL` result (or one of a status this client does not know).
    /// - Throws: ``RetentionMessagingError``: ``RetentionMessagingError/Code/appStoreUnavailable`` when the test is
    ///   still pending at `timeout`.
    public func waitForPerformanceTest(
        requestId: String,
        interval: Duration = .seconds(15),
        timeout: Duration = .seconds(3600),
        progress: @Sendable (RetentionPerformanceTestResult) async -> Void = { _ in }
    ) async throws(RetentionMessagingError) -> RetentionPerformanceTestResult {
        let end = ContinuousClock.now + timeout
        while true {
            let result = try await performanceTestResult(requestId: requestId)
            guard result.result == .pending || result.result == nil else { return result }
            await progress(result)
            guard ContinuousClock.now + interval < end else {
                throw RetentionMessagingError(
                    .appStoreUnavailable,
                    "the performance test is still pending after \(timeout); poll its result again later"
                )
            }
            do {
                try await Task.sleep(for: interval)
            } catch {
                throw RetentionMessagingError(.appStoreUnavailable, "waiting for the performance test was cancelled")
            }
        }
    }

    // MARK: - Helpers

    private func defaultPath(productId: String, locale: String) throws(RetentionMessagingError) -> String {
        let product = try RetentionMessagingLimits.productId(productId)
        let locale = try RetentionMessagingLimits.locale(locale)
        return "/inApps/v1/messaging/default/\(product)/\(locale)"
    }

    private static func isRequestId(_ value: String) -> Bool {
        (1...128).contains(value.utf8.count)
            && value.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
            }
    }

    private func encode(_ value: some Encodable) throws(RetentionMessagingError) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return ByteBuffer(bytes: try encoder.encode(value))
        } catch {
            throw RetentionMessagingError(.invalidRequest, "the request could not be written")
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, from body: ByteBuffer) throws(RetentionMessagingError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw RetentionMessagingError(.invalidResponse, "the App Store's answer could not be read")
        }
    }
}
