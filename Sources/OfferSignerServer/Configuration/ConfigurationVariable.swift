import Configuration
import Foundation
import Logging
import OfferApplication

/// Every configuration variable the service and its command line read, in one place. Everything is read
/// through swift-configuration (`ConfigReader` over the environment, secrets marked and never printed); the
/// configuration table of docs/configuration.md is checked against ``allCases`` by a test, so a variable cannot be added
/// without being documented. Keys by identifier (`OFFER_SIGNER_KEY_<KEYID>`, `…_FILE`) are found by prefix
/// (``KeyLoader``), since swift-configuration has no key enumeration.
public enum ConfigurationVariable: String, CaseIterable, Sendable {
    case bundleIdentifier = "offerSigner.bundleId"
    case keysDir = "offerSigner.keysDir"
    case activeKeyId = "offerSigner.activeKeyId"
    case host = "offerSigner.host"
    case port = "offerSigner.port"
    case issuerId = "offerSigner.issuerId"
    case policy = "offerSigner.policy"
    case databaseUrl = "offerSigner.databaseUrl"
    /// How long a request waits for the store (a PostgreSQL connection, a SQLite file's lock) before 503.
    case storeTimeout = "offerSigner.storeTimeout"
    case environments = "offerSigner.environments"
    case appAppleId = "offerSigner.appAppleId"
    case trustedRoots = "offerSigner.trustedRoots"
    case adminTokens = "offerSigner.adminTokens"
    case stateFile = "offerSigner.stateFile"
    case idleTimeout = "offerSigner.idleTimeout"
    case requestTimeout = "offerSigner.requestTimeout"
    case maxConnections = "offerSigner.maxConnections"
    case retentionDeadline = "offerSigner.retentionDeadline"
    /// How far an App Store `signedDate` may be from now (seconds): real-time requests either way, notifications ahead.
    case appStoreClockSkew = "offerSigner.appStoreClockSkew"
    /// Days the decision log keeps decisions made under a policy (the dry-run's history).
    case decisionLogDays = "offerSigner.decisionLogDays"
    case apiKeys = "offerSigner.apiKeys"
    case clientJwtSecret = "offerSigner.clientJwtSecret"
    case clientJwtKeys = "offerSigner.clientJwtKeys"
    case clientJwtIssuer = "offerSigner.clientJwtIssuer"
    case clientJwtAudience = "offerSigner.clientJwtAudience"
    case clientJwtCustomerClaim = "offerSigner.clientJwtCustomerClaim"
    case clientAuth = "offerSigner.clientAuth"
    case rateLimitClient = "offerSigner.rateLimitClient"
    case rateLimitCustomer = "offerSigner.rateLimitCustomer"
    case rateLimitAppStore = "offerSigner.rateLimitAppStore"
    /// The App Store Server API (docs/app-store-api.md): the In-App Purchase key's ID and file, a base URL for
    /// tests and proxies, the time budget and the answer cache.
    case appStoreApiKeyId = "offerSigner.appStoreApiKeyId"
    case appStoreApiKeyFile = "offerSigner.appStoreApiKeyFile"
    case appStoreApiUrl = "offerSigner.appStoreApiUrl"
    case appStoreApiTimeout = "offerSigner.appStoreApiTimeout"
    case appStoreApiCacheTtl = "offerSigner.appStoreApiCacheTtl"
    case adminHost = "offerSigner.adminHost"
    case adminPort = "offerSigner.adminPort"
    case logLevel = "log.level"
    /// `json` or `text` (``LogFormat``).
    case logFormat = "log.format"
    /// The key of the customer hashes in logs (``CustomerHash``).
    case logHashKey = "offerSigner.logHashKey"
    /// The command line's admin client: the service's URL and an admin token.
    case url = "offerSigner.url"
    case adminToken = "offerSigner.adminToken"

    /// The key swift-configuration reads.
    public var key: ConfigKey { ConfigKey(rawValue) }

    /// The environment variable: the key's components in upper snake case (`offerSigner.bundleIdentifier` is
    /// `OFFER_SIGNER_BUNDLE_ID`), as swift-configuration's environment provider maps them.
    public var environmentName: String {
        rawValue.split(separator: ".").map { component in
            component.reduce(into: "") { name, character in
                if character.isUppercase { name += "_" }
                name += character.uppercased()
            }
        }.joined(separator: "_")
    }

    /// Whether the value is a secret: never printed, neither by swift-configuration's access reporting nor by
    /// `offer-signer config check` (``ServiceConfiguration/effectiveSettings(environment:)``).
    public var isSecret: Bool {
        [.adminTokens, .adminToken, .apiKeys, .clientJwtSecret, .databaseUrl, .logHashKey].contains(self)
    }

    /// The prefix of the service's own variables, for messages that speak of them all (`OFFER_SIGNER_*`).
    public static let environmentPrefix = "OFFER_SIGNER_"
    /// The prefix of the keys by identifier: `OFFER_SIGNER_KEY_<KEYID>` (a PEM) and `OFFER_SIGNER_KEY_<KEYID>_FILE`
    /// (a path), found by prefix (``KeyLoader``).
    public static let keyPrefix = environmentPrefix + "KEY_"
    /// The suffix of a key variable that names a file rather than holding the PEM.
    public static let keyFileSuffix = "_FILE"

    /// Names with the service's prefix that belong to the project's build and test tools, not to the service
    /// (Package.swift, scripts/, IntegrationTests/, Benchmarks/): never reported as unknown
    /// (``unknownVariableWarnings(in:)``).
    static let toolVariables: Set<String> = [
        "OFFER_SIGNER_TEST_DATABASE_URL", "OFFER_SIGNER_BENCH_DATABASE_URL", "OFFER_SIGNER_BENCHMARKS", "OFFER_SIGNER_FUZZ",
        "OFFER_SIGNER_FUZZ_SECONDS", "OFFER_SIGNER_BIN", "OFFER_SIGNER_VENV",
    ]

    /// The variable of an inline key: `OFFER_SIGNER_KEY_<keyIdentifier>`.
    public static func keyVariable(_ keyIdentifier: String) -> String { keyPrefix + keyIdentifier }

    /// The variable of a key file: `OFFER_SIGNER_KEY_<keyIdentifier>_FILE`.
    public static func keyFileVariable(_ keyIdentifier: String) -> String { keyPrefix + keyIdentifier + keyFileSuffix }

    /// The process's environment variables: the one place the service and its command line read them. Everything
    /// else takes the environment as a value (``ServiceConfiguration/init(environment:requireKeys:)``,
    /// ``reader(_:)``, ``KeyLoader/load(environment:now:)``), so that tests pass their own.
    public static var processEnvironment: [String: String] { ProcessInfo.processInfo.environment }

    /// A reader over `environment`, with keys, tokens and the database URL marked secret.
    public static func reader(_ environment: [String: String]) -> ConfigReader {
        let secrets = Set(allCases.filter(\.isSecret).map(\.environmentName))
        return ConfigReader(
            provider: EnvironmentVariablesProvider(
                environmentVariables: environment,
                secretsSpecifier: .dynamic { name, _ in
                    (name.hasPrefix(keyPrefix) && !name.hasSuffix(keyFileSuffix)) || secrets.contains(name)
                }
            )
        )
    }
}

extension DefaultStringInterpolation {
    /// Writes a variable's environment name, so that messages name variables without spelling them:
    /// `"\(variable: .bundleIdentifier) is not set"` reads `OFFER_SIGNER_BUNDLE_ID is not set`.
    public mutating func appendInterpolation(variable: ConfigurationVariable) {
        appendLiteral(variable.environmentName)
    }
}

extension ConfigReader {
    /// The variable's value; an empty value counts as unset.
    public func string(_ variable: ConfigurationVariable) -> String? {
        string(forKey: variable.key, isSecret: variable.isSecret).flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// The log level `LOG_LEVEL` names (`trace` … `critical`; default `info`).
/// - Throws: ``ConfigurationError`` for a name that is not a level.
public func configuredLogLevel(_ environment: [String: String]) throws(ConfigurationError) -> Logger.Level {
    guard let text = ConfigurationVariable.reader(environment).string(.logLevel) else { return .info }
    guard let level = Logger.Level(rawValue: text.lowercased()) else {
        throw ConfigurationError(
            .invalidConfiguration,
            """
            \(variable: .logLevel)=\(text.prefix(20)) is not a log level; use one of \
            \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")).
            """
        )
    }
    return level
}
