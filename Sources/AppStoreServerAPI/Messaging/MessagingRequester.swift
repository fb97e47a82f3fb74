import AppStoreNotifications
import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// Sends one request of the Retention Messaging API with the App Store Server API's token, rate limiter and retry
/// timing, and returns the body of its 2xx answer.
///
/// Retried: HTTP 429 after its `Retry-After` (bounded by ``RetentionMessagingClient/Options/maximumRetryAfter`` and
/// the call's budget; the rate limiter is paused until then for every later request), and — for requests that may be
/// repeated (`idempotent`) — HTTP 5xx and network failures with backoff. An upload is never repeated after an answer
/// that may have stored it: Apple's uploads are not idempotent, and a second attempt would answer "already exists"
/// for the first one. Every other status is Apple's answer, mapped by ``RetentionMessagingError/fromApple(status:errorCode:)``.
struct MessagingRequester: Sendable {
    let baseURLs: AppStoreServerAPIConfiguration.BaseURLs
    let options: RetentionMessagingClient.Options
    let retry: AppStoreServerAPIConfiguration.RetryPolicy
    let httpClient: HTTPClient
    let tokens: BearerTokenProvider
    let limiter: RateLimiter
    let defaultsLimiter: RateLimiter
    let logger: Logger

    /// What a request sends.
    enum Body {
        case none
        case json(ByteBuffer)
        case png(ByteBuffer)
    }

    func send(
        _ method: HTTPMethod,
        _ endpoint: Endpoint,
        path: String,
        query: [(String, String)] = [],
        body: Body = .none,
        environment: AppStoreEnvironment,
        idempotent: Bool
    ) async throws(RetentionMessagingError) -> ByteBuffer {
        guard let base = baseURLs.url(for: environment) else {
            throw RetentionMessagingError(.invalidConfiguration, "the \(environment.rawValue) environment has no App Store Server API")
        }
        let url = APIRequester.url(base: base, path: path, query: query)
        let deadline = ContinuousClock.now + options.timeout
        let key = RateLimiter.Key(environment: environment, endpoint: endpoint)
        let limiter = endpoint == .messagingConfigureDefault ? defaultsLimiter : self.limiter
        var logger = self.logger
        logger[metadataKey: "app_store_endpoint"] = "\(endpoint.rawValue)"
        logger[metadataKey: "app_store_environment"] = "\(environment.rawValue)"
        let attempts = max(1, options.maximumAttempts)
        var lastFailure = "no attempt was made"

        for attempt in 1...attempts {
            guard let wait = await limiter.reserve(key, deadline: deadline) else {
                throw RetentionMessagingError(
                    .rateLimited,
                    "Apple's rate limit for this endpoint leaves no time within the call's budget of \(options.timeout)"
                )
            }
            if wait > .zero { try await Self.sleep(for: wait) }
            let token: String
            do {
                token = try await tokens.token()
            } catch {
                throw RetentionMessagingError(.invalidConfiguration, error.message)
            }
            let outcome = await attemptOnce(
                method: method,
                url: url,
                body: body,
                token: token,
                deadline: deadline,
                endpoint: endpoint,
                environment: environment
            )
            let retryDelay: Duration
            switch outcome {
            case .success(let answer):
                return answer
            case .failure(let failure):
                lastFailure = failure.description
                switch failure {
                case .status(let status, let errorCode, let retryAfter):
                    switch status {
                    case 401:
                        await tokens.invalidate()
                        logger.error("the App Store refused the authentication token (check the key ID, issuer ID, bundle ID and key)")
                        throw RetentionMessagingError(
                            .unauthorized,
                            """
                            the App Store refused this server's authentication token: check the In-App Purchase key, its key ID, the issuer ID \
                            and the bundle ID
                            """
                        )
                    case 429:
                        let delay = RetryTiming.retryAfter(retryAfter) ?? RetryTiming.backoff(retry: attempt, policy: retry)
                        let resumeAt = ContinuousClock.now + delay
                        await limiter.pause(key, until: resumeAt)
                        guard attempt < attempts, delay <= options.maximumRetryAfter, resumeAt < deadline else {
                            logger.warning("the App Store's rate limit was reached", metadata: ["retry_after": "\(delay)"])
                            throw RetentionMessagingError(
                                .rateLimited,
                                "Apple's rate limit was reached and it asks to wait \(Self.seconds(delay)), longer than this client waits",
                                appleErrorCode: errorCode
                            )
                        }
                        logger.info("the App Store's rate limit was reached; waiting as its Retry-After says", metadata: ["retry_after": "\(delay)"])
                        retryDelay = delay
                    case 500..<600:
                        guard idempotent else {
                            throw RetentionMessagingError(
                                .appStoreUnavailable,
                                """
                                the App Store answered HTTP \(status); the upload was not repeated (it may have been stored): list the \
                                catalogue to see
                                """,
                                appleErrorCode: errorCode
                            )
                        }
                        retryDelay = RetryTiming.backoff(retry: attempt, policy: retry)
                    default:
                        let error = RetentionMessagingError.fromApple(status: status, errorCode: errorCode)
                        logger.debug(
                            "the App Store refused a retention messaging request",
                            metadata: ["status": "\(status)", "code": "\(error.code)"]
                        )
                        throw error
                    }
                case .network:
                    guard idempotent else {
                        throw RetentionMessagingError(
                            .appStoreUnavailable,
                            "the connection to the App Store failed; the upload was not repeated (it may have been stored): list the catalogue to see"
                        )
                    }
                    retryDelay = RetryTiming.backoff(retry: attempt, policy: retry)
                case .timedOut:
                    throw RetentionMessagingError(.appStoreUnavailable, "the App Store did not answer within the call's budget of \(options.timeout)")
                case .tooLarge:
                    throw RetentionMessagingError(.invalidResponse, "the App Store's answer is larger than this client reads")
                case .cancelled:
                    throw RetentionMessagingError(.appStoreUnavailable, "the request to the App Store was cancelled")
                }
            }
            guard attempt < attempts, ContinuousClock.now + retryDelay < deadline else { break }
            Counter(label: "offer_signer_app_store_api_retries_total", dimensions: [("endpoint", endpoint.rawValue)]).increment()
            try await Self.sleep(for: retryDelay)
        }
        logger.warning("the App Store is unavailable", metadata: ["failure": "\(lastFailure)"])
        throw RetentionMessagingError(.appStoreUnavailable, "the App Store is unavailable (\(lastFailure)) and retries ran out")
    }

    private func attemptOnce(
        method: HTTPMethod,
        url: String,
        body: Body,
        token: String,
        deadline: ContinuousClock.Instant,
        endpoint: Endpoint,
        environment: AppStoreEnvironment
    ) async -> Result<ByteBuffer, APIRequester.Failure> {
        var request = HTTPClientRequest(url: url)
        request.method = method
        switch body {
        case .none:
            break
        case .json(let bytes):
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(bytes)
        case .png(let bytes):
            request.headers.add(name: "Content-Type", value: "image/png")
            request.body = .bytes(bytes)
        }
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "offer-signer")
        let remaining = deadline - .now
        guard remaining > .zero else { return .failure(.timedOut) }
        let httpClient = self.httpClient
        let logger = self.logger
        let limit = options.maximumResponseBytes
        let prepared = request
        let started = ContinuousClock.now
        let result: Result<ByteBuffer, APIRequester.Failure>
        do {
            let answer = try await withDeadline(remaining) { () async throws -> Result<ByteBuffer, APIRequester.Failure> in
                let response = try await httpClient.execute(prepared, deadline: .now() + .nanoseconds(remaining.nanoseconds), logger: logger)
                let status = Int(response.status.code)
                if (200..<300).contains(status) {
                    return .success(try await response.body.collect(upTo: limit))
                }
                let body = try? await response.body.collect(upTo: 16 * 1024)
                let errorCode = body.flatMap { try? JSONDecoder().decode(ErrorPayload.self, from: Data($0.readableBytesView)) }?.errorCode
                return .failure(.status(status, errorCode: errorCode, retryAfter: response.headers.first(name: "Retry-After")))
            }
            result = answer ?? .failure(.timedOut)
        } catch is NIOTooManyBytesError {
            result = .failure(.tooLarge)
        } catch {
            if Task.isCancelled {
                result = .failure(.cancelled)
            } else if ContinuousClock.now >= deadline {
                result = .failure(.timedOut)
            } else {
                result = .failure(.network)
            }
        }
        Timer(
            label: "offer_signer_app_store_api_request_duration_seconds",
            dimensions: [("endpoint", endpoint.rawValue)],
            preferredDisplayUnit: .seconds
        )
        .recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        let outcome: String
        switch result {
        case .success: outcome = "ok"
        case .failure(let failure): outcome = failure.outcome
        }
        Counter(
            label: "offer_signer_app_store_api_requests_total",
            dimensions: [
                ("endpoint", endpoint.rawValue), ("environment", environment.rawValue.lowercased()), ("outcome", outcome),
            ]
        ).increment()
        return result
    }

    private static func sleep(for duration: Duration) async throws(RetentionMessagingError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw RetentionMessagingError(.appStoreUnavailable, "the request to the App Store was cancelled")
        }
    }

    private static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f s", duration.timeInterval)
    }
}
