import AppStoreNotifications
import AppStoreServerAPI
import Configuration
import Crypto
import Foundation
import OfferApplication
import OfferSigning

/// The App Store Server API settings (`OFFER_SIGNER_APP_STORE_API_*`, docs/app-store-api.md): read and checked at
/// start-up, turned into one client configuration per app by ``clientConfiguration(for:environments:)``.
public struct AppStoreAPISettings: Sendable {
    /// `OFFER_SIGNER_APP_STORE_API_KEY_ID`.
    public var keyIdentifier: String
    /// The key: the `.p8` of `OFFER_SIGNER_APP_STORE_API_KEY_FILE`, or the signing key with the same ID.
    public var privateKeyPEM: String
    /// Where the key came from, for start-up messages (a path or "the signing key <ID>"), never the key.
    public var keySource: String
    /// `OFFER_SIGNER_ISSUER_ID`; an app's `issuerIdentifier` in the policy wins.
    public var issuerId: String?
    /// `OFFER_SIGNER_APP_STORE_API_URL`: one base URL for every environment; `nil` uses Apple's hosts.
    public var baseURL: String?
    /// `OFFER_SIGNER_APP_STORE_API_TIMEOUT`: the time budget of one lookup, retries and waits included.
    public var timeout: Duration = .seconds(2)
    /// `OFFER_SIGNER_APP_STORE_API_CACHE_TTL`: how long an answer is reused; `.zero` turns the cache off.
    public var cacheTimeToLive: Duration = .seconds(60)

    /// Settings from values (tests, embedders).
    public init(
        keyIdentifier: String,
        privateKeyPEM: String,
        keySource: String = "given",
        issuerId: String?,
        baseURL: String? = nil,
        timeout: Duration = .seconds(2),
        cacheTimeToLive: Duration = .seconds(60)
    ) {
        self.keyIdentifier = keyIdentifier
        self.privateKeyPEM = privateKeyPEM
        self.keySource = keySource
        self.issuerId = issuerId
        self.baseURL = baseURL
        self.timeout = timeout
        self.cacheTimeToLive = cacheTimeToLive
    }

    /// Reads the settings; `nil` when `OFFER_SIGNER_APP_STORE_API_KEY_ID` is not set (the API is never asked).
    /// - Throws: ``ConfigurationError`` naming the variable at fault.
    static func read(_ config: ConfigReader, environment: [String: String]) throws(ConfigurationError) -> AppStoreAPISettings? {
        guard let keyIdentifier = config.string(.appStoreApiKeyId) else {
            if config.string(.appStoreApiKeyFile) != nil {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable: .appStoreApiKeyFile) is set without \(variable: .appStoreApiKeyId); set the key's ID too (shown beside the key \
                    in App Store Connect).
                    """
                )
            }
            return nil
        }
        guard KeyIdentifier.isValid(keyIdentifier) else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: .appStoreApiKeyId)=\(keyIdentifier.prefix(20)) is not a key ID: use the 10 letters and digits App Store Connect \
                shows beside the In-App Purchase key.
                """
            )
        }
        let pem: String
        let source: String
        if let path = config.string(.appStoreApiKeyFile) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable: .appStoreApiKeyFile): cannot read \(path); point it at the SubscriptionKey_\(keyIdentifier).p8 file App Store \
                    Connect gave you.
                    """
                )
            }
            pem = String(decoding: data, as: UTF8.self)
            source = "file \(path)"
            do {
                _ = try SigningKey(
                    keyIdentifier: keyIdentifier,
                    pemRepresentation: pem,
                    source: ConfigurationVariable.appStoreApiKeyFile.environmentName
                )
            } catch {
                throw ConfigurationError(.invalidConfiguration, "\(variable: .appStoreApiKeyFile): \(error.message)")
            }
        } else {
            // Without a file, the signing key of the same ID: App Store Connect's In-App Purchase keys serve both.
            guard let entry = try KeyLoader.load(environment: environment).first(where: { $0.key.keyIdentifier == keyIdentifier }) else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    """
                    \(variable: .appStoreApiKeyId)=\(keyIdentifier) names no signing key and \(variable: .appStoreApiKeyFile) is not set: set \
                    the file (SubscriptionKey_\(keyIdentifier).p8), or load that key as a signing key \
                    (\(ConfigurationVariable.keyFileVariable(keyIdentifier)) or \(variable: .keysDir)).
                    """
                )
            }
            pem = entry.key.privateKey.pemRepresentation
            source = "the signing key \(keyIdentifier)"
        }
        var settings = AppStoreAPISettings(keyIdentifier: keyIdentifier, privateKeyPEM: pem, keySource: source, issuerId: config.string(.issuerId))
        if let url = config.string(.appStoreApiUrl) {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(variable: .appStoreApiUrl)=\(url.prefix(80)) is not an http or https URL (for example https://proxy.internal:8443/appstore)."
                )
            }
            settings.baseURL = url
        }
        if let timeout = try config.duration(.appStoreApiTimeout, in: .milliseconds(100)...(.seconds(30)), note: "for example 2s or 1500ms") {
            settings.timeout = timeout
        }
        if let ttl = try config.duration(.appStoreApiCacheTtl, in: .zero...(.seconds(86_400)), note: "0s turns the cache off; for example 60s") {
            settings.cacheTimeToLive = ttl
        }
        return settings
    }

    /// The client configuration of one app: its issuer ID (the policy's, else `OFFER_SIGNER_ISSUER_ID`), Production
    /// then Sandbox among the accepted environments.
    /// - Throws: ``ConfigurationError`` naming `OFFER_SIGNER_ISSUER_ID` or `OFFER_SIGNER_ENVIRONMENTS`.
    public func clientConfiguration(
        for app: AppConfiguration,
        environments: Set<AppStoreEnvironment>
    ) throws(ConfigurationError) -> AppStoreServerAPIConfiguration {
        guard let issuer = app.issuerIdentifier ?? issuerId, !issuer.isEmpty else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: .appStoreApiKeyId) is set but \(app.bundleIdentifier) has no issuer ID: set \(variable: .issuerId) (App Store \
                Connect > Users and Access > Integrations > In-App Purchase) or issuerIdentifier in the policy.
                """
            )
        }
        let ordered = [AppStoreEnvironment.production, .sandbox].filter(environments.contains)
        guard !ordered.isEmpty else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: .environments) accepts neither Production nor Sandbox, the only environments the App Store Server API has; add one, \
                or unset \(variable: .appStoreApiKeyId).
                """
            )
        }
        var configuration = AppStoreServerAPIConfiguration(
            keyIdentifier: keyIdentifier,
            privateKeyPEM: privateKeyPEM,
            issuerId: issuer,
            bundleIdentifier: app.bundleIdentifier,
            environments: ordered
        )
        if let baseURL { configuration.baseURLs = .init(override: baseURL) }
        configuration.timeout = timeout
        configuration.cacheTimeToLive = cacheTimeToLive
        return configuration
    }
}

extension AppStoreAPISettings: CustomStringConvertible {
    /// The settings without the key.
    public var description: String {
        """
        App Store Server API key \(keyIdentifier) (from \(keySource)), timeout \(timeout), cache \
        \(cacheTimeToLive)\(baseURL.map { ", base URL \($0)" } ?? "")
        """
    }
}
