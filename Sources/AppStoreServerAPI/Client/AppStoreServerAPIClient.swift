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
/// let verifier = try SignedDataVerifier(bundleId: "com.example.app", appAppleId: 1234567890,
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
    private let configuration: AppStoreServerAPIConfiguration
    private let verifier: SignedDataVerifier
    private let requester: APIRequester
    private let statusCache: AnswerCache<SubscriptionStatuses>
    private let historyCache: AnswerCache<TransactionHistory>
    private let logger: Logger

    /// The most signed items one answer may carry (a page of history has at most 20).
    static let maximumSignedItems = 200

    /// Creates a client for one app.
    ///
    /// - Parameters:
    ///   - configuration: Key, identifiers, environments, budgets.
    ///   - verifier: The verifier of the app's notifications; it must accept the configured environments and trust
    ///     the root that signs the App Store's data.
    ///   - httpClient: The HTTP client to send requests with; default the shared one. Its lifetime is the caller's.
    ///   - logger: Where to log; lines carry no token, key or transaction identifier.
    /// - Throws: ``AppStoreServerAPIError/Code/invalidConfiguration`` for an unreadable key, an empty identifier, an
    ///   environment without an API, a bundle ID that is not the verifier's, or a non-positive budget.
    public init(
        configuration: AppStoreServerAPIConfiguration,
        verifier: SignedDataVerifier,
        httpClient: HTTPClient = .shared,
        logger: Logger = Logger(label: "offer-signer.app-store-server-api")
    ) throws(AppStoreServerAPIError) {
        guard !configuration.environments.isEmpty,
              configuration.environments.allSatisfy({ $0 == .production || $0 == .sandbox }),
              Set(configuration.environments).count == configuration.environments.count
        else {
            throw AppStoreServerAPIError(
                .invalidConfiguration, "the App Store Server API environments must be Production and/or Sandbox, each once")
        }
        guard configuration.bundleId == verifier.bundleId else {
            throw AppStoreServerAPIError(
                .invalidConfiguration, "the App Store Server API's bundle ID is not the one signed data is verified for")
        }
        guard configuration.timeout > .zero, configuration.maximumHistoryPages > 0, configuration.maximumResponseBytes > 0
        else {
            throw AppStoreServerAPIError(
                .invalidConfiguration, "the App Store Server API's timeout, page limit and answer size limit must be positive")
        }
        let tokens = try BearerTokenProvider(configuration: configuration)
        self.configuration = configuration
        self.verifier = verifier
        self.logger = logger
        self.requester = APIRequester(
            configuration: configuration, httpClient: httpClient, tokens: tokens,
            rateLimiter: RateLimiter(configuration.rateLimit), logger: logger)
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
            id, environments: configuration.environments, deadline: ContinuousClock.now + configuration.timeout)
    }

    // MARK: - Cached, single-flight answers

    private func statuses(
        _ id: TransactionIdentifier, deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> SubscriptionStatuses {
        try await cached(statusCache, endpoint: .subscriptionStatuses, key: id.value, deadline: deadline) {
            try await self.fetchAcrossEnvironments(self.configuration.environments, id: id) { environment throws(AppStoreServerAPIError) in
                try await self.fetchStatuses(id, environment: environment, deadline: deadline)
            }
        }
    }

    private func history(
        _ id: TransactionIdentifier, environments: [AppStoreEnvironment], deadline: ContinuousClock.Instant
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
                        Counter(label: "offer_signer_app_store_api_single_flight_joins_total", dimensions: [
                            ("endpoint", endpoint.rawValue),
                        ]).increment()
                    case .started:
                        break
                    }
                },
                operation: operation)
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
            } catch where error.code == .notFound {
                notFound = AppStoreServerAPIError(
                    .notFound,
                    "the App Store does not know this transaction in "
                        + environments[...index].map(\.rawValue).joined(separator: " or "))
                if index + 1 < environments.count {
                    logger.info(
                        "transaction not found in one App Store environment, asking the next",
                        metadata: [
                            "app_store_environment": "\(environment.rawValue)",
                            "next_environment": "\(environments[index + 1].rawValue)",
                            "transaction_fingerprint": "\(id.fingerprint)",
                        ])
                }
            }
        }
        throw notFound
    }

    // MARK: - Fetching and verifying

    private func fetchStatuses(
        _ id: TransactionIdentifier, environment: AppStoreEnvironment, deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> SubscriptionStatuses {
        let body = try await requester.get(
            .subscriptionStatuses, path: "/inApps/v1/subscriptions/\(id.value)", environment: environment,
            deadline: deadline, fingerprint: id.fingerprint)
        let response = try decode(StatusResponse.self, from: body)
        try checkApp(environment: response.environment, bundleId: response.bundleId, appAppleId: response.appAppleId, asked: environment)
        let groups = response.data ?? []
        let count = groups.reduce(0) { $0 + ($1.lastTransactions?.count ?? 0) }
        guard count <= Self.maximumSignedItems else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer has more subscriptions than this server accepts")
        }
        var items: [VerifiedLastTransaction] = []
        for group in groups {
            for item in group.lastTransactions ?? [] {
                guard let signedTransaction = item.signedTransactionInfo else {
                    throw AppStoreServerAPIError(.invalidResponse, "a subscription in the App Store's answer has no signed transaction")
                }
                let transaction = try await verifyTransaction(signedTransaction, environment: environment)
                var renewalInfo: JWSRenewalInfoDecodedPayload?
                if let signedRenewalInfo = item.signedRenewalInfo {
                    let renewal = try await verifyRenewalInfo(signedRenewalInfo, environment: environment)
                    guard renewal.originalTransactionId == transaction.originalTransactionId else {
                        throw AppStoreServerAPIError(
                            .invalidResponse, "renewal information in the App Store's answer belongs to another subscription")
                    }
                    renewalInfo = renewal
                }
                guard item.originalTransactionId == nil || item.originalTransactionId == transaction.originalTransactionId else {
                    throw AppStoreServerAPIError(
                        .invalidResponse, "a subscription in the App Store's answer does not match its signed transaction")
                }
                items.append(VerifiedLastTransaction(
                    subscriptionGroupIdentifier: group.subscriptionGroupIdentifier, status: item.status,
                    transaction: transaction, renewalInfo: renewalInfo))
            }
        }
        return SubscriptionStatuses(environment: environment, lastTransactions: items)
    }

    private func fetchHistory(
        _ id: TransactionIdentifier, environment: AppStoreEnvironment, deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> TransactionHistory {
        var transactions: [JWSTransactionDecodedPayload] = []
        var positions: [String: Int] = [:]
        var revisions: Set<String> = []
        var revision: String?
        var complete = false
        for _ in 1...configuration.maximumHistoryPages {
            var query = [("productType", "AUTO_RENEWABLE"), ("sort", "ASCENDING")]
            if let revision { query.append(("revision", revision)) }
            let body = try await requester.get(
                .transactionHistory, path: "/inApps/v2/history/\(id.value)", query: query, environment: environment,
                deadline: deadline, fingerprint: id.fingerprint)
            let page = try decode(HistoryResponse.self, from: body)
            try checkApp(environment: page.environment, bundleId: page.bundleId, appAppleId: page.appAppleId, asked: environment)
            let signed = page.signedTransactions ?? []
            guard signed.count <= Self.maximumSignedItems else {
                throw AppStoreServerAPIError(.invalidResponse, "a page of the App Store's history has more transactions than this server accepts")
            }
            for signedTransaction in signed {
                let transaction = try await verifyTransaction(signedTransaction, environment: environment)
                let key = transaction.transactionId ?? "#\(transactions.count)"
                if let position = positions[key] {
                    if (transaction.signedDate ?? .min) >= (transactions[position].signedDate ?? .min) {
                        transactions[position] = transaction
                    }
                } else {
                    positions[key] = transactions.count
                    transactions.append(transaction)
                }
            }
            guard page.hasMore == true else {
                complete = true
                break
            }
            guard let next = page.revision, !next.isEmpty, next.utf8.count <= 4096, revisions.insert(next).inserted else {
                throw AppStoreServerAPIError(.invalidResponse, "the App Store's history says it has more but gives no new revision")
            }
            revision = next
        }
        if !complete {
            logger.warning(
                "transaction history longer than the page limit; the rest is not read",
                metadata: ["pages": "\(configuration.maximumHistoryPages)", "transaction_fingerprint": "\(id.fingerprint)"])
        }
        return TransactionHistory(environment: environment, transactions: transactions, isComplete: complete)
    }

    private func decode<T: Decodable>(_ type: T.Type, from body: ByteBuffer) throws(AppStoreServerAPIError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer could not be read")
        }
    }

    /// The answer is about this app, from the environment asked.
    private func checkApp(
        environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?, asked: AppStoreEnvironment
    ) throws(AppStoreServerAPIError) {
        guard environment == asked else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is not from the environment asked")
        }
        guard bundleId == configuration.bundleId else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is about another app")
        }
        if asked == .production, let expected = verifier.appAppleId, let appAppleId, appAppleId != expected {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is about another app")
        }
    }

    private func verifyTransaction(
        _ signed: String, environment: AppStoreEnvironment
    ) async throws(AppStoreServerAPIError) -> JWSTransactionDecodedPayload {
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await verifier.verifyAndDecodeTransaction(signed)
        } catch {
            logger.warning("a signed transaction from the App Store failed verification", metadata: ["reason": "\(error.code)"])
            throw AppStoreServerAPIError(
                .invalidResponse, "a signed transaction in the App Store's answer failed verification (\(error.code))")
        }
        guard transaction.environment == environment else {
            throw AppStoreServerAPIError(.invalidResponse, "a signed transaction in the App Store's answer is from another environment")
        }
        return transaction
    }

    private func verifyRenewalInfo(
        _ signed: String, environment: AppStoreEnvironment
    ) async throws(AppStoreServerAPIError) -> JWSRenewalInfoDecodedPayload {
        let renewalInfo: JWSRenewalInfoDecodedPayload
        do {
            renewalInfo = try await verifier.verifyAndDecodeRenewalInfo(signed)
        } catch {
            logger.warning("signed renewal information from the App Store failed verification", metadata: ["reason": "\(error.code)"])
            throw AppStoreServerAPIError(
                .invalidResponse, "signed renewal information in the App Store's answer failed verification (\(error.code))")
        }
        guard renewalInfo.environment == environment else {
            throw AppStoreServerAPIError(.invalidResponse, "signed renewal information in the App Store's answer is from another environment")
        }
        return renewalInfo
    }
}
