import AppStoreNotifications
import Configuration
import Foundation
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferSigning
import X509

/// How each group of settings is read from the environment, with its ranges and its error messages.
extension ServiceConfiguration {
    package static func reader(_ environment: [String: String]) -> ConfigReader {
        ConfigurationVariable.reader(environment)
    }

    static func clientAuth(_ config: ConfigReader) throws(ConfigurationError) -> ClientAuthConfiguration {
        var auth = ClientAuthConfiguration()
        auth.apiKeys = try BearerTokens(
            parsing: config.string(.apiKeys) ?? "",
            variable: ConfigurationVariable.apiKeys.environmentName,
            requireNames: true
        )
        if let secret = config.string(.clientJwtSecret) {
            guard secret.utf8.count >= 32 else {
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(variable: .clientJwtSecret) is shorter than 32 bytes; use the HS256 secret your login service signs with (at least 256 bits)."
                )
            }
            auth.jwtSecret = secret
        }
        auth.jwtKeysPath = config.string(.clientJwtKeys)
        auth.issuer = config.string(.clientJwtIssuer)
        auth.audience = config.string(.clientJwtAudience)
        auth.customerClaim = config.string(.clientJwtCustomerClaim) ?? "sub"
        switch config.string(.clientAuth)?.lowercased() {
        case nil: break
        case "none": auth.isOpen = true
        case let other?:
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: .clientAuth)=\(other.prefix(20)) is not understood; the only value is none (the open mode for local development). \
                Configure credentials with \(variable: .apiKeys) or \(variable: .clientJwtSecret) / \(variable: .clientJwtKeys).
                """
            )
        }
        guard auth.hasCredentials || auth.isOpen else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                No client authentication is configured, so anyone could ask for any customer's signature. Set \(variable: .apiKeys)=name:key \
                (your backend) and/or \(variable: .clientJwtSecret) or \(variable: .clientJwtKeys) (your app's login tokens); for local \
                development only, \(variable: .clientAuth)=none. See the README, \"Securing it\".
                """
            )
        }
        return auth
    }

    package static func rateLimits(_ config: ConfigReader) throws(ConfigurationError) -> RateLimitConfiguration {
        var limits = RateLimitConfiguration()
        if let text = config.string(.rateLimitClient) {
            limits.client = try Rate.parse(text, variable: ConfigurationVariable.rateLimitClient.environmentName)
            limits.clientExplicit = true
        }
        if let text = config.string(.rateLimitCustomer) {
            limits.customer = try Rate.parse(text, variable: ConfigurationVariable.rateLimitCustomer.environmentName)
            limits.customerExplicit = true
        }
        if let text = config.string(.rateLimitAppStore) {
            limits.appStore = try Rate.parse(text, variable: ConfigurationVariable.rateLimitAppStore.environmentName)
        }
        return limits
    }

    package static func operationsListener(_ config: ConfigReader, publicPort: Int) throws(ConfigurationError) -> (host: String, port: Int)? {
        guard let port = try config.integer(.adminPort, in: 0...65_535, note: "a port number; 0 picks a free one") else {
            if config.string(.adminHost) != nil {
                throw ConfigurationError(
                    .invalidConfiguration,
                    "\(variable: .adminHost) is set without \(variable: .adminPort); set the port of the operations listener too."
                )
            }
            return nil
        }
        guard port == 0 || port != publicPort else {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable: .adminPort)=\(port) is \(variable: .port) too; give the operations listener a port of its own."
            )
        }
        return (try listenHost(config, .adminHost), port)
    }

    package static func connectionLimits(_ config: ConfigReader) throws(ConfigurationError) -> ConnectionLimits {
        var limits = ConnectionLimits()
        if let seconds = try config.integer(.idleTimeout, in: 1...3_600, unit: "seconds") { limits.idleTimeout = .seconds(seconds) }
        if let seconds = try config.integer(.requestTimeout, in: 1...600, unit: "seconds") { limits.requestTimeout = .seconds(seconds) }
        if let count = try config.integer(.maxConnections, in: 1...1_000_000, unit: "connections") { limits.maximumConnections = count }
        return limits
    }

    package static func retentionDeadline(_ config: ConfigReader) throws(ConfigurationError) -> Duration {
        guard let milliseconds = try config.integer(.retentionDeadline, in: 10...5_000, unit: "milliseconds", note: "Apple gives up after 700") else {
            return .milliseconds(500)
        }
        return .milliseconds(milliseconds)
    }

    package static func storeTimeout(_ config: ConfigReader) throws(ConfigurationError) -> Duration {
        try config.duration(.storeTimeout, in: .milliseconds(100)...(.seconds(60)), note: "for example 2s or 500ms") ?? .seconds(2)
    }

    package static func decisionLogDays(_ config: ConfigReader) throws(ConfigurationError) -> Int {
        try config.integer(.decisionLogDays, in: 1...PolicyDryRun.maximumDays, unit: "days") ?? 90
    }

    package static func appStoreClockSkew(_ config: ConfigReader) throws(ConfigurationError) -> TimeInterval {
        guard let seconds = try config.integer(.appStoreClockSkew, in: 10...3_600, unit: "seconds") else {
            return NotificationIngestor.defaultClockSkew
        }
        return TimeInterval(seconds)
    }

    /// A warning for each app whose App Store data (notifications, signed transactions, retention requests, the App
    /// Store Server API's answers) cannot be verified: said once, at start-up by `serve` and by `config check`,
    /// rather than by every command that opens the store.
    static func verificationWarnings(
        apps: [AppConfiguration],
        environments: Set<AppStoreEnvironment>,
        trustedRoots: [Certificate]?,
        asksAppStoreAPI: Bool
    ) -> [String] {
        var warnings: [String] = []
        for app in apps {
            do {
                _ = try SignedDataVerifier(
                    bundleIdentifier: app.bundleIdentifier,
                    appAppleId: app.appAppleId,
                    environments: environments,
                    trustedRoots: trustedRoots
                )
            } catch {
                let api = asksAppStoreAPI ? "; the App Store Server API is not asked for it either" : ""
                if environments.contains(.production), app.appAppleId == nil {
                    warnings.append(
                        "App Store notifications and signed transactions for \(app.bundleIdentifier) are refused: accepting Production needs "
                            + """
                            the app's Apple ID, \(variable: .appAppleId) (App Store Connect > App Information > Apple ID) or appAppleId in the \
                            policy\(api).
                            """
                    )
                } else {
                    warnings.append(
                        "App Store notifications and signed transactions for \(app.bundleIdentifier) are refused: \(error.message)\(api)."
                    )
                }
            }
        }
        return warnings
    }

    package static func listenAddress(_ config: ConfigReader) throws(ConfigurationError) -> (String, Int) {
        let host = try listenHost(config, .host)
        let port = try config.integer(.port, in: 0...65_535, note: "a port number; 0 picks a free one") ?? 8080
        return (host, port)
    }

    /// A listen host: an IPv4 or IPv6 address, or a host name (letters, digits, `-` and `.`; a name of digits and
    /// dots is an IPv4 address), else 78 at start-up and in `config check` rather than a failed bind.
    static func listenHost(_ config: ConfigReader, _ variable: ConfigurationVariable) throws(ConfigurationError) -> String {
        let host = config.string(variable) ?? "127.0.0.1"
        if (try? SocketAddress(ipAddress: host, port: 0)) != nil { return host }  // an IPv4 or IPv6 literal, no lookup
        // A fully qualified name may end with a dot; names may hold `_` (container and service names).
        let labels = (host.hasSuffix(".") ? String(host.dropLast()) : host).split(separator: ".", omittingEmptySubsequences: false)
        let isName =
            (1...253).contains(host.utf8.count)
            && labels.allSatisfy { label in
                (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                    && label.utf8.allSatisfy { $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
            }
        guard isName, !labels.allSatisfy({ $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }) else {
            throw ConfigurationError(
                .invalidConfiguration,
                """
                \(variable: variable)=\(host.prefix(64)) is not an address to listen on: give an IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::) \
                or a host name.
                """
            )
        }
        return host
    }
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}
