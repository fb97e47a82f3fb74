import AppStoreNotifications
import Configuration
import Foundation
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferSigning
import X509

/// Everything the service needs to start, read from the environment (docs/design.md §3).
///
/// ## Usage
///
/// ```swift
/// let configuration = try ServiceConfiguration(environment: ConfigurationVariable.processEnvironment)
/// let app = try buildApplication(configuration: configuration)
/// try await app.runService()
/// ```
///
/// Fixed names are read through swift-configuration's `ConfigReader` over the environment, with keys and
/// tokens marked secret; keys by identifier (`OFFER_SIGNER_KEY_<KEYID>`) are found by prefix, since
/// swift-configuration has no key enumeration.
public struct ServiceConfiguration: Sendable {
    /// Listen address (`OFFER_SIGNER_HOST`, default 127.0.0.1).
    public var host: String
    /// Listen port (`OFFER_SIGNER_PORT`, default 8080; 0 picks a free port).
    public var port: Int
    /// The apps served (`OFFER_SIGNER_BUNDLE_ID`).
    public var apps: [AppConfiguration]
    /// The keys and which one signs.
    public var keyRing: KeyRing
    /// `OFFER_SIGNER_DATABASE_URL` (default `sqlite:offer-signer.sqlite`; `serve --demo`: in memory); `nil`
    /// runs without a store (embedders and tests).
    public var databaseURL: String?
    /// Whether this is `serve --demo`: a throw-away key the App Store will never accept.
    public var isDemo: Bool
    /// Re-reads the key sources, for reloads (SIGHUP, `POST /admin/keys/reload`, the folder watcher).
    public var loadKeys: KeyManager.KeyLoading
    /// `OFFER_SIGNER_ACTIVE_KEY_ID`, as configured (an admin's activation overrides it).
    public var configuredActiveKeyIdentifier: String?
    /// `OFFER_SIGNER_KEYS_DIR`, watched for changes.
    public var keysDirectory: String?
    /// `OFFER_SIGNER_ADMIN_TOKENS`.
    public var adminTokens: BearerTokens
    /// `OFFER_SIGNER_STATE_FILE`: where admins' key states live; `nil` keeps them in the store (shared by
    /// replicas), or in memory without a store.
    public var stateFilePath: String?
    /// `OFFER_SIGNER_POLICY`, parsed; `nil` signs every well-formed request.
    public var policy: OfferPolicy?
    /// `OFFER_SIGNER_TRUSTED_ROOTS`, read; `nil` trusts the bundled Apple Root CA - G3.
    public var trustedRoots: [Certificate]?
    /// `OFFER_SIGNER_ENVIRONMENTS` (default Production).
    public var environments: Set<AppStoreEnvironment> = [.production]
    /// Things worth saying at start-up that do not stop it.
    public var warnings: [String]
    /// How `/v1/offers/*` callers authenticate (`OFFER_SIGNER_API_KEYS`, `OFFER_SIGNER_CLIENT_JWT_*`,
    /// `OFFER_SIGNER_CLIENT_AUTH`).
    public var clientAuth = ClientAuthConfiguration.open
    /// `OFFER_SIGNER_RATE_LIMIT_*`.
    public var rateLimits = RateLimitConfiguration()
    /// `OFFER_SIGNER_ADMIN_HOST`/`OFFER_SIGNER_ADMIN_PORT`: the operations listener for `/admin/*` and
    /// `/metrics`; `nil` serves everything on the public port.
    public var operationsListener: (host: String, port: Int)?
    /// Timeouts and the connection limit (`OFFER_SIGNER_IDLE_TIMEOUT`, `OFFER_SIGNER_REQUEST_TIMEOUT`,
    /// `OFFER_SIGNER_MAX_CONNECTIONS`).
    public var connectionLimits = ConnectionLimits()
    /// `OFFER_SIGNER_RETENTION_DEADLINE`: how long a retention request may take before the fallback message is
    /// answered (Apple gives up after 700 ms).
    public var retentionDeadline: Duration = .milliseconds(500)
    /// `OFFER_SIGNER_STORE_TIMEOUT`: how long a call waits for the database — a PostgreSQL connection, another
    /// process's lock on a SQLite file — before the request is answered 503 `store_unavailable`.
    public var storeTimeout: Duration = .seconds(2)
    /// `OFFER_SIGNER_APP_STORE_CLOCK_SKEW`: seconds an App Store `signedDate` may be from now — a real-time
    /// retention request either way, a notification ahead (docs/retention.md, docs/notifications.md).
    public var appStoreClockSkew: TimeInterval = NotificationIngestor.defaultClockSkew
    /// `OFFER_SIGNER_DECISION_LOG_DAYS`: days the decision log keeps decisions (docs/policy.md "Dry-run"), purged by
    /// ``StorePurge``.
    public var decisionLogDays = 90
    /// What an embedder adds (`serve --demo`: the demo's routes, customers and stand-in App Store); `nil` for none.
    public var addOn: ServiceAddOn?
    /// `OFFER_SIGNER_APP_STORE_API_*`: asks Apple for the facts of customers the store does not know; `nil` (no key
    /// ID) never asks.
    public var appStoreAPI: AppStoreAPISettings?

    /// Creates a configuration from values.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        apps: [AppConfiguration],
        keyRing: KeyRing,
        databaseURL: String? = nil,
        isDemo: Bool = false,
        warnings: [String] = [],
        loadKeys: KeyManager.KeyLoading? = nil,
        configuredActiveKeyIdentifier: String? = nil,
        keysDirectory: String? = nil,
        adminTokens: BearerTokens = .none,
        stateFilePath: String? = nil,
        policy: OfferPolicy? = nil
    ) {
        self.policy = policy
        let entries = keyRing.entries
        self.loadKeys = loadKeys ?? { entries }
        self.configuredActiveKeyIdentifier = configuredActiveKeyIdentifier ?? keyRing.activeKeyIdentifier
        self.keysDirectory = keysDirectory
        self.adminTokens = adminTokens
        self.stateFilePath = stateFilePath
        self.host = host
        self.port = port
        self.apps = apps
        self.keyRing = keyRing
        self.databaseURL = databaseURL
        self.isDemo = isDemo
        self.warnings = warnings
    }

    /// Reads the configuration from environment variables.
    /// - Parameter requireKeys: `false` for tools that only read the store and the policy
    ///   (`eligibility explain`, `notifications import`).
    /// - Throws: ``ConfigurationError`` naming the variable or key at fault.
    public init(environment: [String: String], requireKeys: Bool = true) throws(ConfigurationError) {
        let config = Self.reader(environment)
        let (host, port) = try Self.listenAddress(config)
        var policy: OfferPolicy?
        if let path = config.string(.policy) {
            do {
                policy = try OfferPolicy(contentsOf: path)
            } catch {
                throw ConfigurationError(.invalidConfiguration, "\(variable: .policy): \(error.message)")
            }
        }
        var apps: [AppConfiguration] = []
        let issuer = config.string(.issuerId)
        let appAppleId = try config.integer(
            .appAppleId,
            in: Int.min...Int.max,
            note: "the app's Apple ID: App Store Connect > App Information > Apple ID"
        ).map(Int64.init)
        if let bundleIdentifier = config.string(.bundleIdentifier) {
            do {
                try PayloadField.validate(
                    bundleIdentifier,
                    named: ConfigurationVariable.bundleIdentifier.environmentName,
                    maximumLength: PayloadField.maximumBundleIdentifierLength
                )
            } catch {
                throw ConfigurationError(.invalidConfiguration, error.message)
            }
            if let policy, policy.app(bundleIdentifier) == nil {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable: .bundleIdentifier)=\(bundleIdentifier) is not an app of the policy (\(variable: .policy)); add it there or \
                    unset the variable.
                    """
                )
            }
            let fromPolicy = policy?.app(bundleIdentifier)
            apps.append(
                AppConfiguration(
                    bundleIdentifier: bundleIdentifier,
                    issuerIdentifier: fromPolicy?.issuerIdentifier ?? issuer,
                    appAppleId: fromPolicy?.appAppleId ?? appAppleId
                )
            )
        }
        for app in policy?.apps ?? [] where !apps.contains(where: { $0.bundleIdentifier == app.bundleIdentifier }) {
            apps.append(
                AppConfiguration(
                    bundleIdentifier: app.bundleIdentifier,
                    issuerIdentifier: app.issuerIdentifier ?? issuer,
                    appAppleId: app.appAppleId ?? (policy?.apps.count == 1 ? appAppleId : nil)
                )
            )
        }
        var trustedRoots: [Certificate]?
        if let paths = config.list(.trustedRoots) {
            var roots: [Certificate] = []
            for path in paths {
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ConfigurationError(.invalidConfiguration, "\(variable: .trustedRoots): cannot read \(path).")
                }
                do {
                    roots.append(try TrustedRootCertificates.certificate(pemOrDER: Array(data)))
                } catch {
                    throw ConfigurationError(.invalidConfiguration, "\(variable: .trustedRoots): \(path) is not a PEM or DER certificate.")
                }
            }
            trustedRoots = roots
        }
        var environments: Set<AppStoreEnvironment> = [.production]
        if let names = config.list(.environments) {
            environments = []
            for name in names {
                let known: [String: AppStoreEnvironment] = [
                    "production": .production, "sandbox": .sandbox, "xcode": .xcode, "localtesting": .localTesting,
                ]
                guard let environment = known[name.lowercased()] else {
                    throw ConfigurationError(
                        .invalidConfiguration,
                        "\(variable: .environments): unknown environment '\(name.prefix(30))'; use Production, Sandbox, Xcode or LocalTesting."
                    )
                }
                environments.insert(environment)
            }
        }
        guard !apps.isEmpty else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: .bundleIdentifier) is not set: set it to your app's bundle identifier (com.example.app), or list your apps in a \
                policy file (\(variable: .policy)). For a try-out with a throw-away key, run `offer-signer serve --demo`.
                """
            )
        }
        let keys = requireKeys ? try KeyLoader.load(environment: environment) : []
        guard !keys.isEmpty || !requireKeys else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                No signing key is configured: set \(ConfigurationVariable.keyVariable("<KEYID>")) (the PEM), \
                \(ConfigurationVariable.keyFileVariable("<KEYID>")) (a path to SubscriptionKey_<KEYID>.p8) or \(variable: .keysDir) (a folder \
                of them). See keys.example.
                """
            )
        }
        let active = config.string(.activeKeyId)
        let keyRing: KeyRing
        do {
            // Which key signs is settled by the KeyManager, which also applies the admins' saved states
            // (OFFER_SIGNER_STATE_FILE); a configuration without a usable active key fails there.
            keyRing = try KeyRing(keys: keys, activeKeyIdentifier: active)
            for app in policy?.apps ?? [] {
                if let key = app.activeKeyIdentifier, keyRing.entry(for: key) == nil, requireKeys {
                    throw OfferSigningError(
                        .unknownKey,
                        """
                        The policy's active key for \(app.bundleIdentifier), \(key), is not among the loaded keys \
                        (\(keys.map(\.key.keyIdentifier).joined(separator: ", "))).
                        """
                    )
                }
            }
        } catch let error as OfferSigningError {
            throw ConfigurationError(.invalidConfiguration, error.message)
        } catch {
            throw ConfigurationError(.invalidConfiguration, "\(error)")
        }
        let adminTokens = try BearerTokens(parsing: config.string(.adminTokens) ?? "")
        let stateFile = config.string(.stateFile)
        var warnings: [String] = []
        if policy == nil {
            warnings.append(
                """
                No eligibility policy is configured (\(variable: .policy)): every well-formed request for \
                \(apps.map(\.bundleIdentifier).joined(separator: ", ")) is signed.
                """
            )
        }
        if adminTokens.isEmpty {
            warnings.append("No \(variable: .adminTokens): the admin API (/admin) refuses every request.")
        }
        self.init(
            host: host,
            port: port,
            apps: apps,
            keyRing: keyRing,
            databaseURL: config.string(.databaseUrl) ?? Self.defaultDatabaseURL,
            warnings: warnings,
            loadKeys: { () throws(ConfigurationError) -> [KeyRing.Entry] in try KeyLoader.load(environment: environment) },
            configuredActiveKeyIdentifier: active,
            keysDirectory: config.string(.keysDir),
            adminTokens: adminTokens,
            stateFilePath: stateFile,
            policy: policy
        )
        self.trustedRoots = trustedRoots
        self.environments = environments
        if let url = databaseURL, !(url.hasPrefix("sqlite:") || url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")) {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable: .databaseUrl) is neither sqlite:PATH nor postgres://user:password@host:port/database; see docs/store.md."
            )
        }
        self.connectionLimits = try Self.connectionLimits(config)
        self.retentionDeadline = try Self.retentionDeadline(config)
        self.storeTimeout = try Self.storeTimeout(config)
        self.appStoreClockSkew = try Self.appStoreClockSkew(config)
        self.decisionLogDays = try Self.decisionLogDays(config)
        self.clientAuth = try Self.clientAuth(config)
        self.rateLimits = try Self.rateLimits(config)
        self.operationsListener = try Self.operationsListener(config, publicPort: port)
        self.appStoreAPI = try AppStoreAPISettings.read(config, environment: environment)
        if let appStoreAPI {
            for app in apps { _ = try appStoreAPI.clientConfiguration(for: app, environments: environments) }
        }
        self.warnings += Self.verificationWarnings(
            apps: apps,
            environments: environments,
            trustedRoots: trustedRoots,
            asksAppStoreAPI: appStoreAPI != nil
        )
        self.warnings += ConfigurationVariable.unknownVariableWarnings(in: environment)
        if clientAuth.isOpen {
            var credentials = ""
            if clientAuth.hasCredentials {
                credentials =
                    """
                     The credentials configured (\(variable: .apiKeys), login tokens) are not required in this mode: \
                    unset \(variable: .clientAuth) to require them.
                    """
            }
            self.warnings.append(
                """
                OPEN CLIENT MODE (\(variable: .clientAuth)=none): /v1/offers/* signs for anyone who can reach it, \
                for any customer they name. For local development only.\(credentials)
                """
            )
        }
    }

    /// The store when `OFFER_SIGNER_DATABASE_URL` is not set: an SQLite file in the working directory.
    public static let defaultDatabaseURL = "sqlite:offer-signer.sqlite"
}
