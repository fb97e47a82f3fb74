public import AppStoreNotifications
public import AsyncHTTPClient
import Foundation
public import Logging
import Metrics
import NIOCore

/// Asks the App Store Server API about a customer the store has never seen: Get All Subscription Statuses and Get
/// Transaction History, every signed item verified with the same ``SignedDataVerifier`` as notifications.
///
/// - Authentication: an ES256 token signed with the In-App Purchase key, reused until five minutes before it
///   expires.
/// - Environments: asked in the configured order (Production first); a "not found" from one moves on to the next
///   (Sandbox), as Apple's documentation describes for a transaction of unknown environment.
/// - Resilience: one time budget per call (``AppStoreServerAPIConfiguration/timeout``, retries and waits included);
///   retries with backoff and jitter on server errors and network failures, and after `Retry-After` on 429; a
///   client-side token bucket per environment and endpoint; one request in flight per transaction, shared by every
///   concurrent caller; answers cached for ``AppStoreServerAPIConfiguration/cacheTimeToLive``.
/// - Safety: transaction identifiers are checked before they go into a URL; answers are bounded in size and pages;
///   one item failing verification refuses the whole answer. Errors are ``AppStoreServerAPIError``s in plain words;
///   no token, key or transaction identifier is logged (log lines carry a short fingerprint of the identifier).
///
/// Configuration is not read here: the server builds an ``AppStoreServerAPIConfiguration`` from its variables.
///
/// ## Usage
///
/// ```swift
/// let verifier = try SignedDataVerifier(bundleIdentifier: "com.example.app", appAppleId: 1234567890,
///                                       environments: [.production, .sandbox])
/// let client = try AppStoreServerAPIClient(configuration: configuration, verifier: verifier)
///
/// do {
///     let fetched = try await client.facts(forTransaction: originalTransactionId)
///     let facts = fetched.facts(for: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: token))
/// } catch where error.code == .notFound {
///     // the App Store does not know the transaction: a new customer
/// } catch where error.code == .appStoreUnavailable || error.code == .rateLimited {
///     // decide without the App Store's facts, or ask the client to retry later
/// }
/// ```
public final class AppStoreServerAPIClient: Sendable {
    /// The configuration it was made with (the Retention Messaging API takes the same key and token).
    public let configuration: AppStoreServerAPIConfiguration
    let verifier: SignedDataVerifier
    let requester: APIRequester
    let statusCache: AnswerCache<SubscriptionStatuses>
    let historyCache: AnswerCache<TransactionHistory>
    let logger: Logger

    /// The most signed items one answer may carry (a page of history has at most 20).
    static let maximumSignedItems = 200

    /// Creates a client for one app.
    ///
    /// - Parameters:
    ///   - configuration: Key, identifiers, environments, budgets.
    ///   - verifier: The verifier of the app's notifications; it must accept the configured environments and trust
    ///     the root that signs the App Store's data.
    ///   - httpClient: The HTTP client to send requests with; default the shared one. Its lifetime is the caller's.
    ///   - quota: Apple's per-app quota shared with the service's other replicas, asked after this client's own limit
    ///     (``AppStoreQuota``); `nil` (the default): this client alone asks for the app.
    ///   - logger: Where to log; lines carry no token, key or transaction identifier.
    /// - Throws: ``AppStoreServerAPIError/Code/invalidConfiguration`` for an unreadable key, an empty identifier, an
    ///   environment without an API, a bundle ID that is not the verifier's, or a non-positive budget.
    public init(
        configuration: AppStoreServerAPIConfiguration,
        verifier: SignedDataVerifier,
        httpClient: HTTPClient = .shared,
        quota: (any AppStoreQuota)? = nil,
        logger: Logger = Logger(label: "offer-signer.app-store-server-api")
    ) throws(AppStoreServerAPIError) {
        guard !configuration.environments.isEmpty,
            configuration.environments.allSatisfy({ $0 == .production || $0 == .sandbox }),
            Set(configuration.environments).count == configuration.environments.count
        else {
            throw AppStoreServerAPIError(
                .invalidConfiguration,
                "the App Store Server API environments must be Production and/or Sandbox, each once"
            )
        }
        guard configuration.bundleIdentifier == verifier.bundleIdentifier else {
            throw AppStoreServerAPIError(
                .invalidConfiguration,
                "the App Store Server API's bundle ID is not the one signed data is verified for"
            )
        }
        guard configuration.timeout > .zero, configuration.maximumHistoryPages > 0, configuration.maximumResponseBytes > 0
        else {
            throw AppStoreServerAPIError(
                .invalidConfiguration,
                "the App Store Server API's timeout, page limit and answer size limit must be positive"
            )
        }
        let tokens = try BearerTokenProvider(configuration: configuration)
        self.configuration = configuration
        self.verifier = verifier
        self.logger = logger
        self.requester = APIRequester(
            configuration: configuration,
            httpClient: httpClient,
            tokens: tokens,
            rateLimiter: RateLimiter(configuration.rateLimit),
            quota: quota,
            logger: logger
        )
        self.statusCache = AnswerCache(timeToLive: configuration.cacheTimeToLive, capacity: configuration.cacheCapacity)
        self.historyCache = AnswerCache(timeToLive: configuration.cacheTimeToLive, capacity: configuration.cacheCapacity)
    }

    /// The customer's subscriptions and their facts, from the statuses and (by default) the transaction history.
    ///
    /// Both questions share one time budget. The history is asked of the environment that answered the statuses.
    ///
    /// - Parameters:
    ///   - transactionId: Any transaction identifier of the customer: `originalTransactionId`, `transactionId` or
    ///     `appTransactionId` (decimal digits).
    ///   - includeHistory: Whether to read the history too (needed to know whether an introductory offer was used
    ///     and how many renewals there were); default `true`.
    /// - Returns: The verified answers, ready to fold into customer facts.
    /// - Throws: ``AppStoreServerAPIError``.
    public func facts(
        forTransaction transactionId: String,
        includeHistory: Bool = true
    ) async throws(AppStoreServerAPIError) -> FetchedSubscriptionFacts {
        let id = try TransactionIdentifier(transactionId)
        let deadline = ContinuousClock.now + configuration.timeout
        let statuses = try await statuses(id, deadline: deadline)
        var fetchedHistory: TransactionHistory?
        if includeHistory {
            fetchedHistory = try await history(id, environments: [statuses.environment], deadline: deadline)
        }
        return FetchedSubscriptionFacts(statuses: statuses, history: fetchedHistory)
    }

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    ///
    /// - Parameter transactionId: Any transaction identifier of the customer (decimal digits).
    /// - Returns: The latest transaction and renewal info of each of the customer's subscriptions, verified.
    /// - Throws: ``AppStoreServerAPIError``.
    public func subscriptionStatuses(
        forTransaction transactionId: String
    ) async throws(AppStoreServerAPIError) -> SubscriptionStatuses {
        let id = try TransactionIdentifier(transactionId)
        return try await statuses(id, deadline: ContinuousClock.now + configuration.timeout)
    }

    /// Get Transaction History (v2): `GET /inApps/v2/history/{transactionId}`, auto-renewable subscriptions only,
    /// oldest change first, every page up to ``AppStoreServerAPIConfiguration/maximumHistoryPages``.
    ///
    /// - Parameter transactionId: Any transaction identifier of the customer (decimal digits).
    /// - Returns: The verified transactions.
    /// - Throws: ``AppStoreServerAPIError``.
    public func transactionHistory(
        forTransaction transactionId: String
    ) async throws(AppStoreServerAPIError) -> TransactionHistory {
        let id = try TransactionIdentifier(transactionId)
        return try await history(
            id,
            environments: configuration.environments,
            deadline: ContinuousClock.now + configuration.timeout
        )
    }

    // MARK: - Cached, single-flight answers

    private func statuses(
        _ id: TransactionIdentifier,
        deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> SubscriptionStatuses {
        try await cached(statusCache, endpoint: .subscriptionStatuses, key: id.value, deadline: deadline) {
            try await self.fetchAcrossEnvironments(self.configuration.environments, id: id) { environment throws(AppStoreServerAPIError) in
                try await self.fetchStatuses(id, environment: environment, deadline: deadline)
            }
        }
    }

    private func history(
        _ id: TransactionIdentifier,
        environments: [AppStoreEnvironment],
        deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> TransactionHistory {
        let key = environments.map(\.rawValue).joined(separator: ",") + "/" + id.value
        return try await cached(historyCache, endpoint: .transactionHistory, key: key, deadline: deadline) {
            try await self.fetchAcrossEnvironments(environments, id: id) { environment throws(AppStoreServerAPIError) in
                try await self.fetchHistory(id, environment: environment, deadline: deadline)
            }
        }
    }

    private func cached<Value: Sendable>(
        _ cache: AnswerCache<Value>,
        endpoint: Endpoint,
        key: String,
        deadline: ContinuousClock.Instant,
        operation: @escaping @Sendable () async throws -> Value
    ) async throws(AppStoreServerAPIError) -> Value {
        do {
            return try await cache.value(
                for: key,
                deadline: deadline,
                timeoutError: AppStoreServerAPIError(.appStoreUnavailable, "the App Store did not answer within the time budget"),
                cancellationError: AppStoreServerAPIError(.appStoreUnavailable, "the request to the App Store was cancelled"),
                event: { event in
                    switch event {
                    case .hit:
                        Counter(label: "offer_signer_app_store_api_cache_hits_total", dimensions: [("endpoint", endpoint.rawValue)])
                            .increment()
                    case .joined:
                        Counter(
                            label: "offer_signer_app_store_api_single_flight_joins_total",
                            dimensions: [
                                ("endpoint", endpoint.rawValue)
                            ]
                        ).increment()
                    case .started:
                        break
                    }
                },
                operation: operation
            )
        } catch let error as AppStoreServerAPIError {
            throw error
        } catch {
            throw AppStoreServerAPIError(.appStoreUnavailable, "the request to the App Store failed unexpectedly")
        }
    }

    /// Asks each environment in turn; a "not found" moves on to the next, anything else ends the search.
    private func fetchAcrossEnvironments<Value>(
        _ environments: [AppStoreEnvironment],
        id: TransactionIdentifier,
        _ fetch: (AppStoreEnvironment) async throws(AppStoreServerAPIError) -> Value
    ) async throws(AppStoreServerAPIError) -> Value {
        var notFound = AppStoreServerAPIError(.notFound, "the App Store does not know this transaction")
        for (index, environment) in environments.enumerated() {
            do {
                return try await fetch(environment)
            } catch  where error.code == .notFound {
                notFound = AppStoreServerAPIError(
                    .notFound,
                    "the App Store does not know this transaction in "
                        + environments[...index].map(\.rawValue).joined(separator: " or ")
                )
                if index + 1 < environments.count {
                    logger.info(
                        "transaction not found in one App Store environment, asking the next",
                        metadata: [
                            "app_store_environment": "\(environment.rawValue)",
                            "next_environment": "\(environments[index + 1].rawValue)",
                            "transaction_fingerprint": "\(id.fingerprint)",
                        ]
                    )
                }
            }
        }
        throw notFound
    }

    // MARK: - Fetching and verifying
}
