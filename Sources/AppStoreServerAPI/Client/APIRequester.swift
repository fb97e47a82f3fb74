import AppStoreNotifications
import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Tracing

/// Sends one GET to one environment of the App Store Server API and returns the body of its `200`, retrying what
/// may succeed on a second try, within a deadline.
///
/// Retried: HTTP 5xx, Apple's "retryable" 404 codes, network failures (after an exponential backoff with full
/// jitter) and HTTP 429 (after its `Retry-After`, which also pauses the rate limiter). Not retried: 400, 401, 404,
/// an answer too large, and anything once the next wait would end past the deadline.
struct APIRequester: Sendable {
    let configuration: AppStoreServerAPIConfiguration
    let httpClient: HTTPClient
    let tokens: BearerTokenProvider
    let rateLimiter: RateLimiter
    /// The fleet's share of Apple's quota, asked after ``rateLimiter`` (`nil`: this process alone asks Apple).
    var quota: (any AppStoreQuota)? = nil
    let logger: Logger

    /// A `GET` of `path` (which starts with `/`) with `query`, to `environment`.
    ///
    /// - Throws: ``AppStoreServerAPIError``: `.notFound` for a 404 (not retryable), `.unauthorized`, `.rateLimited`,
    ///   `.invalidTransactionIdentifier`, `.invalidRequest`, `.invalidResponse`, `.appStoreUnavailable`.
    func get(
        _ endpoint: Endpoint,
        path: String,
        query: [(String, String)] = [],
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant,
        fingerprint: String
    ) async throws(AppStoreServerAPIError) -> ByteBuffer {
        try await request(endpoint, path: path, query: query, json: nil, environment: environment, deadline: deadline, fingerprint: fingerprint)
    }

    /// Sends a request (`POST` with a JSON body when `json` is given, else `GET`) with the token, the retries, the
    /// rate limit and the time budget every call has; the answer's body.
    func request(
        _ endpoint: Endpoint,
        path: String,
        query: [(String, String)] = [],
        json: ByteBuffer?,
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant,
        fingerprint: String
    ) async throws(AppStoreServerAPIError) -> ByteBuffer {
        guard let base = configuration.baseURLs.url(for: environment) else {
            throw AppStoreServerAPIError(.invalidConfiguration, "the \(environment.rawValue) environment has no App Store Server API")
        }
        let url = Self.url(base: base, path: path, query: query)
        let limiterKey = RateLimiter.Key(environment: environment, endpoint: endpoint)
        var logger = self.logger
        logger[metadataKey: "app_store_endpoint"] = "\(endpoint.rawValue)"
        logger[metadataKey: "app_store_environment"] = "\(environment.rawValue)"
        logger[metadataKey: "transaction_fingerprint"] = "\(fingerprint)"
        let attempts = max(1, configuration.retry.maximumAttempts)
        var lastFailure = "no attempt was made"

        for attempt in 1...attempts {
            if attempt > 1 {
                Counter(label: "offer_signer_app_store_api_retries_total", dimensions: [("endpoint", endpoint.rawValue)]).increment()
            }
            guard let wait = await rateLimiter.reserve(limiterKey, deadline: deadline) else {
                throw AppStoreServerAPIError(
                    .rateLimited,
                    "this server's own limit of requests to the App Store leaves no time within the budget"
                )
            }
            if wait > .zero {
                Counter(
                    label: "offer_signer_app_store_api_rate_limit_waits_total",
                    dimensions: [
                        ("environment", environment.rawValue.lowercased())
                    ]
                ).increment()
                try await Self.sleep(for: wait)
            }
            while let quota,
                let wait = await quota.take(
                    bundleIdentifier: configuration.bundleIdentifier,
                    environment: environment,
                    endpoint: endpoint.rawValue
                )
            {
                guard ContinuousClock.now + wait <= deadline else {
                    throw AppStoreServerAPIError(
                        .rateLimited,
                        "the replicas' shared limit of requests to the App Store leaves no time within the budget"
                    )
                }
                Counter(
                    label: "offer_signer_app_store_api_rate_limit_waits_total",
                    dimensions: [
                        ("environment", environment.rawValue.lowercased())
                    ]
                ).increment()
                try await Self.sleep(for: wait)
            }
            let token = try await tokens.token()
            let outcome = await send(url: url, json: json, token: token, endpoint: endpoint, environment: environment, deadline: deadline)
            let retryDelay: Duration
            switch outcome {
            case .success(let body):
                return body
            case .failure(let failure):
                lastFailure = failure.description
                switch failure {
                case .status(let status, let errorCode, let retryAfter):
                    switch status {
                    case 401:
                        await tokens.invalidate()
                        logger.error("the App Store refused the authentication token (check the key ID, issuer ID, bundle ID and key)")
                        throw AppStoreServerAPIError(
                            .unauthorized,
                            """
                            the App Store refused this server's authentication token: check the In-App Purchase key, its key ID, the issuer ID \
                            and the bundle ID
                            """
                        )
                    case 400:
                        if errorCode == AppleErrorCode.invalidTransactionId {
                            throw AppStoreServerAPIError(.invalidTransactionIdentifier, "the App Store says the transaction identifier is not valid")
                        }
                        throw AppStoreServerAPIError(
                            .invalidRequest,
                            "the App Store refused the request as malformed (error \(errorCode.map(String.init) ?? "without a code"))"
                        )
                    case 404 where !(errorCode.map(AppleErrorCode.retryableNotFound.contains) ?? false):
                        throw AppStoreServerAPIError(
                            .notFound,
                            "the App Store does not know this transaction in the \(environment.rawValue) environment"
                        )
                    case 429:
                        let delay = RetryTiming.retryAfter(retryAfter) ?? RetryTiming.backoff(retry: attempt, policy: configuration.retry)
                        let resumeAt = ContinuousClock.now + delay
                        await rateLimiter.pause(limiterKey, until: resumeAt)
                        guard attempt < attempts, delay <= configuration.retry.maximumRetryAfter, resumeAt < deadline else {
                            logger.warning("the App Store's rate limit was reached")
                            throw AppStoreServerAPIError(
                                .rateLimited,
                                "the App Store's rate limit was reached and it asks to wait longer than the time budget allows"
                            )
                        }
                        retryDelay = delay
                    default:
                        retryDelay = RetryTiming.backoff(retry: attempt, policy: configuration.retry)
                    }
                case .network:
                    retryDelay = RetryTiming.backoff(retry: attempt, policy: configuration.retry)
                case .timedOut:
                    logger.warning("the App Store did not answer within the time budget")
                    throw AppStoreServerAPIError(.appStoreUnavailable, "the App Store did not answer within the time budget")
                case .tooLarge:
                    throw AppStoreServerAPIError(
                        .invalidResponse,
                        "the App Store's answer is larger than the limit of \(configuration.maximumResponseBytes) bytes"
                    )
                case .cancelled:
                    throw AppStoreServerAPIError(.appStoreUnavailable, "the request to the App Store was cancelled")
                }
            }
            guard attempt < attempts, ContinuousClock.now + retryDelay < deadline else { break }
            logger.debug("retrying a request to the App Store", metadata: ["attempt": "\(attempt + 1)", "failure": "\(lastFailure)"])
            try await Self.sleep(for: retryDelay)
        }
        logger.warning("the App Store is unavailable", metadata: ["failure": "\(lastFailure)"])
        throw AppStoreServerAPIError(.appStoreUnavailable, "the App Store is unavailable (\(lastFailure)) and retries ran out")
    }

    /// Why one attempt failed.
    enum Failure: Error, CustomStringConvertible {
        case status(Int, errorCode: Int64?, retryAfter: String?)
        case network
        case timedOut
        case tooLarge
        case cancelled

        var description: String {
            switch self {
            case .status(let status, let errorCode, _):
                "HTTP \(status)" + (errorCode.map { ", error \($0)" } ?? "")
            case .network: "the connection failed"
            case .timedOut: "no answer in time"
            case .tooLarge: "the answer was too large"
            case .cancelled: "cancelled"
            }
        }

        /// The outcome dimension of the request counter.
        var outcome: String {
            switch self {
            case .status(let status, _, _):
                switch status {
                case 401: "unauthorized"
                case 404: "not_found"
                case 429: "rate_limited"
                case 400..<500: "client_error"
                case 500..<600: "server_error"
                default: "unexpected_status"
                }
            case .network: "network_error"
            case .timedOut: "timeout"
            case .tooLarge: "too_large"
            case .cancelled: "cancelled"
            }
        }
    }

    /// One attempt, recorded in the request counter and the latency timer, in a client span
    /// `app_store_api.request` whose W3C `traceparent` the request carries (when traces are on; the URL, which
    /// holds a transaction identifier, is not an attribute).
    private func send(
        url: String,
        json: ByteBuffer?,
        token: String,
        endpoint: Endpoint,
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant
    ) async -> Result<ByteBuffer, Failure> {
        await withSpan("app_store_api.request", ofKind: .client) { span in
            span.attributes["http.request.method"] = json == nil ? "GET" : "POST"
            span.attributes["app_store_api.endpoint"] = endpoint.rawValue
            span.attributes["app_store_api.environment"] = environment.rawValue
            let result = await send(
                url: url,
                json: json,
                token: token,
                endpoint: endpoint,
                environment: environment,
                deadline: deadline,
                context: span.context
            )
            switch result {
            case .success:
                span.attributes["http.response.status_code"] = 200
            case .failure(let failure):
                span.setStatus(SpanStatus(code: .error))
                span.attributes["app_store_api.outcome"] = failure.outcome
                if case .status(let status, let errorCode, _) = failure {
                    span.attributes["http.response.status_code"] = status
                    if let errorCode { span.attributes["app_store_api.error_code"] = errorCode }
                }
            }
            return result
        }
    }

    private func send(
        url: String,
        json: ByteBuffer?,
        token: String,
        endpoint: Endpoint,
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant,
        context: InstrumentationContext
    ) async -> Result<ByteBuffer, Failure> {
        var request = HTTPClientRequest(url: url)
        InstrumentationSystem.instrument.inject(context, into: &request.headers, using: HTTPHeadersInjector())
        request.method = .GET
        if let json {
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(json)
        }
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "User-Agent", value: "offer-signer")
        let started = ContinuousClock.now
        let result = await attempt(request, deadline: deadline)
        let elapsed = ContinuousClock.now - started
        Timer(
            label: "offer_signer_app_store_api_request_duration_seconds",
            dimensions: [("endpoint", endpoint.rawValue)],
            preferredDisplayUnit: .seconds
        )
        .recordNanoseconds(elapsed.nanoseconds)
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

    private func attempt(_ request: HTTPClientRequest, deadline: ContinuousClock.Instant) async -> Result<ByteBuffer, Failure> {
        let remaining = deadline - .now
        guard remaining > .zero else { return .failure(.timedOut) }
        let httpClient = self.httpClient
        let logger = self.logger
        let limit = configuration.maximumResponseBytes
        do {
            let result = try await withDeadline(remaining) { () async throws -> Result<ByteBuffer, Failure> in
                let response = try await httpClient.execute(
                    request,
                    deadline: .now() + .nanoseconds(remaining.nanoseconds),
                    logger: logger
                )
                let status = Int(response.status.code)
                if status == 200 {
                    return .success(try await response.body.collect(upTo: limit))
                }
                // Error bodies are small ({"errorCode":…,"errorMessage":…}); read a little, never fail on it.
                let body = try? await response.body.collect(upTo: 16 * 1024)
                let errorCode = body.flatMap { try? JSONDecoder().decode(ErrorPayload.self, from: Data($0.readableBytesView)) }?.errorCode
                let retryAfter = response.headers.first(name: "Retry-After")
                return .failure(.status(status, errorCode: errorCode, retryAfter: retryAfter))
            }
            return result ?? .failure(.timedOut)
        } catch is NIOTooManyBytesError {
            return .failure(.tooLarge)
        } catch {
            if Task.isCancelled { return .failure(.cancelled) }
            if ContinuousClock.now >= deadline { return .failure(.timedOut) }
            return .failure(.network)
        }
    }

    private static func sleep(for duration: Duration) async throws(AppStoreServerAPIError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw AppStoreServerAPIError(.appStoreUnavailable, "the request to the App Store was cancelled")
        }
    }

    /// `base` + `path` + the query, percent-encoded.
    static func url(base: String, path: String, query: [(String, String)]) -> String {
        var url = base.hasSuffix("/") ? String(base.dropLast()) : base
        url += path
        if !query.isEmpty {
            var allowed = CharacterSet.urlQueryAllowed
            allowed.remove(charactersIn: "&=+?#")
            url +=
                "?"
                + query.map { name, value in
                    name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
                }.joined(separator: "&")
        }
        return url
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to `Int64`.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = product.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? (seconds < 0 ? .min : .max) : sum
    }
}

/// Writes a trace's propagation headers (W3C `traceparent`, `tracestate`) into a request's headers.
private struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }
}
