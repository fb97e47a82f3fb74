public import AppStoreNotifications

/// Everything the App Store Server API client needs, as plain values. Nothing here reads the environment: the
/// server's configuration builds this from its variables (`OFFER_SIGNER_APP_STORE_API_KEY_ID`, …).
///
/// ## Usage
///
/// ```swift
/// var configuration = AppStoreServerAPIConfiguration(
///     keyIdentifier: "2X9R4HXF34",
///     privateKeyPEM: try String(contentsOfFile: "/run/secrets/SubscriptionKey_2X9R4HXF34.p8", encoding: .utf8),
///     issuerId: "57246542-96fe-1a63-e053-0824d011072a",
///     bundleIdentifier: "com.example.app")
/// configuration.environments = [.production, .sandbox]   // Production first, Sandbox when Production has no such id
/// configuration.timeout = .seconds(2)
/// ```
public struct AppStoreServerAPIConfiguration: Sendable {
    /// The In-App Purchase key's ID (App Store Connect › Users and Access › Integrations › In-App Purchase).
    public var keyIdentifier: String

    /// The In-App Purchase key (`SubscriptionKey_<keyIdentifier>.p8`): a PKCS#8 PEM of a P-256 private key.
    public var privateKeyPEM: String

    /// The issuer ID shown above the key list in App Store Connect (a UUID).
    public var issuerId: String

    /// The app's bundle identifier (the token's `bid`).
    public var bundleIdentifier: String

    /// The environments asked, in order: Production first, then Sandbox when Production does not know the
    /// transaction. Default: Production only. Only ``AppStoreEnvironment/production`` and
    /// ``AppStoreEnvironment/sandbox`` have an API; others are refused by the initialiser.
    public var environments: [AppStoreEnvironment]

    /// Where each environment's API is.
    public var baseURLs: BaseURLs

    /// The time budget of one call of the client, retries and waits included: no caller waits longer. Default 2 s.
    public var timeout: Duration

    /// How long an answer is reused for the same transaction identifier; `.zero` turns the cache off. Default 60 s.
    public var cacheTimeToLive: Duration

    /// How many answers the cache holds at most (the oldest go first). Default 10 000.
    public var cacheCapacity: Int

    /// The client's own request rate, per environment and endpoint.
    public var rateLimit: RateLimit

    /// Retries of server errors and of rate-limited answers.
    public var retry: RetryPolicy

    /// The most pages of transaction history read for one transaction (20 transactions a page). Default 10.
    public var maximumHistoryPages: Int

    /// The largest answer body accepted, in bytes. Default 1 MiB.
    public var maximumResponseBytes: Int

    /// How long a signed authentication token is used (at most 60 minutes, as Apple requires). Default 20 minutes.
    public var tokenLifetime: Duration

    /// A token is replaced when less than this is left of it. Default 5 minutes.
    public var tokenRefreshMargin: Duration

    /// Creates a configuration with the defaults described on each property.
    ///
    /// - Parameters:
    ///   - keyIdentifier: The In-App Purchase key's ID.
    ///   - privateKeyPEM: The `.p8` file's contents.
    ///   - issuerId: The issuer ID.
    ///   - bundleIdentifier: The app's bundle identifier.
    ///   - environments: The environments asked, in order; default Production only.
    public init(
        keyIdentifier: String,
        privateKeyPEM: String,
        issuerId: String,
        bundleIdentifier: String,
        environments: [AppStoreEnvironment] = [.production]
    ) {
        self.keyIdentifier = keyIdentifier
        self.privateKeyPEM = privateKeyPEM
        self.issuerId = issuerId
        self.bundleIdentifier = bundleIdentifier
        self.environments = environments
        self.baseURLs = BaseURLs()
        self.timeout = .seconds(2)
        self.cacheTimeToLive = .seconds(60)
        self.cacheCapacity = 10_000
        self.rateLimit = RateLimit()
        self.retry = RetryPolicy()
        self.maximumHistoryPages = 10
        self.maximumResponseBytes = 1 << 20
        self.tokenLifetime = .seconds(20 * 60)
        self.tokenRefreshMargin = .seconds(5 * 60)
    }
}

extension AppStoreServerAPIConfiguration {
    /// The base URL of each environment's API.
    ///
    /// The defaults are the hosts Apple's libraries use and Apple's documentation recommends since May 2026
    /// (`api.storekit.apple.com`); the older `api.storekit.itunes.apple.com` hosts remain supported by Apple and can
    /// be set here.
    public struct BaseURLs: Sendable, Hashable {
        /// Production: `https://api.storekit.apple.com`.
        public var production: String

        /// Sandbox: `https://api.storekit-sandbox.apple.com`.
        public var sandbox: String

        /// Apple's hosts.
        public init() {
            self.production = "https://api.storekit.apple.com"
            self.sandbox = "https://api.storekit-sandbox.apple.com"
        }

        /// Explicit base URLs (a proxy, a test server). A path prefix is kept: `http://127.0.0.1:8080/sandbox`.
        ///
        /// - Parameters:
        ///   - production: The base URL asked for Production.
        ///   - sandbox: The base URL asked for Sandbox.
        public init(production: String, sandbox: String) {
            self.production = production
            self.sandbox = sandbox
        }

        /// One base URL for both environments (`OFFER_SIGNER_APP_STORE_API_URL`).
        ///
        /// - Parameter override: The base URL asked for every environment.
        public init(override: String) {
            self.init(production: override, sandbox: override)
        }

        /// The base URL of `environment`, `nil` for an environment without an API.
        func url(for environment: AppStoreEnvironment) -> String? {
            switch environment {
            case .production: production
            case .sandbox: sandbox
            default: nil
            }
        }
    }

    /// The client's own request rate: a token bucket per environment and endpoint, so that this process stays under
    /// Apple's limits (50 requests a second per app in Production for both endpoints, a tenth of that in Sandbox).
    public struct RateLimit: Sendable, Hashable {
        /// Requests a second to Production, per endpoint. Default 50.
        public var productionPerSecond: Double

        /// Requests a second to Sandbox, per endpoint. Default 5.
        public var sandboxPerSecond: Double

        /// Apple's documented limits.
        public init(productionPerSecond: Double = 50, sandboxPerSecond: Double = 5) {
            self.productionPerSecond = productionPerSecond
            self.sandboxPerSecond = sandboxPerSecond
        }
    }

    /// How failed requests are retried: HTTP 5xx, Apple's "retryable" 404 codes, network errors, and HTTP 429 after
    /// its `Retry-After`. Every wait stays within ``AppStoreServerAPIConfiguration/timeout``.
    public struct RetryPolicy: Sendable, Hashable {
        /// Attempts per request, the first included. Default 3.
        public var maximumAttempts: Int

        /// The first backoff; each retry doubles it, with full jitter. Default 50 ms.
        public var initialBackoff: Duration

        /// The longest backoff. Default 1 s.
        public var maximumBackoff: Duration

        /// The longest `Retry-After` honoured; a longer one fails the request as rate limited. Default 10 s.
        public var maximumRetryAfter: Duration

        /// The defaults described on each property.
        public init(
            maximumAttempts: Int = 3,
            initialBackoff: Duration = .milliseconds(50),
            maximumBackoff: Duration = .seconds(1),
            maximumRetryAfter: Duration = .seconds(10)
        ) {
            self.maximumAttempts = maximumAttempts
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
            self.maximumRetryAfter = maximumRetryAfter
        }
    }
}

extension AppStoreServerAPIConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The configuration in words, without the key: safe to log.
    public var description: String {
        "App Store Server API: key ID \(keyIdentifier), issuer ID \(issuerId), bundle ID \(bundleIdentifier), environments "
            + environments.map(\.rawValue).joined(separator: " then ")
            + ", timeout \(timeout), cache \(cacheTimeToLive)"
    }

    /// Same as ``description``: the key is never printed.
    public var debugDescription: String { description }

    /// Every property but the key, which shows as `<redacted>` (so `dump` and string interpolation of a containing
    /// value do not print it).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "keyId": keyIdentifier, "privateKeyPEM": "<redacted>", "issuerId": issuerId, "bundleId": bundleIdentifier,
                "environments": environments, "baseURLs": baseURLs, "timeout": timeout, "cacheTimeToLive": cacheTimeToLive,
                "cacheCapacity": cacheCapacity, "rateLimit": rateLimit, "retry": retry,
                "maximumHistoryPages": maximumHistoryPages, "maximumResponseBytes": maximumResponseBytes,
                "tokenLifetime": tokenLifetime, "tokenRefreshMargin": tokenRefreshMargin,
            ]
        )
    }
}
