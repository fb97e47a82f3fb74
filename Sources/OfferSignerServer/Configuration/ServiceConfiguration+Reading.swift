import AppStoreNotifications
import Configuration
import Foundation
import OfferKeys
import X509
import OfferEligibility
import OfferSigning
import OfferApplication

/// How each group of settings is read from the environment, with its ranges and its error messages.
extension ServiceConfiguration {
    static func reader(_ environment: [String: String]) -> ConfigReader {
        ConfigurationVariable.reader(environment)
    }

    static func clientAuth(_ config: ConfigReader) throws(ConfigurationError) -> ClientAuthConfiguration {
        var auth = ClientAuthConfiguration()
        auth.apiKeys = try BearerTokens(parsing: config.string(.apiKeys) ?? "", variable: ConfigurationVariable.apiKeys.environmentName, requireNames: true)
        if let secret = config.string(.clientJwtSecret) {
            guard secret.utf8.count >= 32 else {
                throw ConfigurationError("\(variable: .clientJwtSecret) is shorter than 32 bytes; use the HS256 secret your login service signs with (at least 256 bits).")
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
            throw ConfigurationError("\(variable: .clientAuth)=\(other.prefix(20)) is not understood; the only value is none (the open mode for local development). Configure credentials with \(variable: .apiKeys) or \(variable: .clientJwtSecret) / \(variable: .clientJwtKeys).")
        }
        guard auth.hasCredentials || auth.isOpen else {
            throw ConfigurationError("No client authentication is configured, so anyone could ask for any customer's signature. Set \(variable: .apiKeys)=name:key (your backend) and/or \(variable: .clientJwtSecret) or \(variable: .clientJwtKeys) (your app's login tokens); for local development only, \(variable: .clientAuth)=none. See the README, \"Securing it\".")
        }
        return auth
    }

    static func rateLimits(_ config: ConfigReader) throws(ConfigurationError) -> RateLimitConfiguration {
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

    static func operationsListener(_ config: ConfigReader, publicPort: Int) throws(ConfigurationError) -> (host: String, port: Int)? {
        guard let text = config.string(.adminPort) else {
            if config.string(.adminHost) != nil {
                throw ConfigurationError("\(variable: .adminHost) is set without \(variable: .adminPort); set the port of the operations listener too.")
            }
            return nil
        }
        guard let port = Int(text), (0...65535).contains(port), port == 0 || port != publicPort else {
            throw ConfigurationError("\(variable: .adminPort)=\(text.prefix(20)) is not a port number (0–65535) other than \(variable: .port).")
        }
        return (config.string(.adminHost) ?? "127.0.0.1", port)
    }

    static func connectionLimits(_ config: ConfigReader) throws(ConfigurationError) -> ConnectionLimits {
        func number(_ key: ConfigurationVariable, _ range: ClosedRange<Int>, _ unit: String) throws(ConfigurationError) -> Int? {
            guard let text = config.string(key) else { return nil }
            guard let value = Int(text.trimmingCharacters(in: CharacterSet.whitespaces)), range.contains(value) else {
                throw ConfigurationError("\(variable: key)=\(text.prefix(20)) is not a whole number of \(unit) from \(range.lowerBound) to \(range.upperBound).")
            }
            return value
        }
        var limits = ConnectionLimits()
        if let seconds = try number(.idleTimeout, 1...3_600, "seconds") { limits.idleTimeout = .seconds(seconds) }
        if let seconds = try number(.requestTimeout, 1...600, "seconds") { limits.requestTimeout = .seconds(seconds) }
        if let count = try number(.maxConnections, 1...1_000_000, "connections") { limits.maximumConnections = count }
        return limits
    }

    static func retentionDeadline(_ config: ConfigReader) throws(ConfigurationError) -> Duration {
        guard let text = config.string(.retentionDeadline) else { return .milliseconds(500) }
        guard let milliseconds = Int(text.trimmingCharacters(in: CharacterSet.whitespaces)), (10...5_000).contains(milliseconds) else {
            throw ConfigurationError("\(variable: .retentionDeadline)=\(text.prefix(20)) is not a whole number of milliseconds from 10 to 5000 (Apple gives up after 700).")
        }
        return .milliseconds(milliseconds)
    }

    static func appStoreClockSkew(_ config: ConfigReader) throws(ConfigurationError) -> TimeInterval {
        guard let text = config.string(.appStoreClockSkew) else { return NotificationIngestor.defaultClockSkew }
        guard let seconds = Int(text.trimmingCharacters(in: CharacterSet.whitespaces)), (10...3_600).contains(seconds) else {
            throw ConfigurationError("\(variable: .appStoreClockSkew)=\(text.prefix(20)) is not a whole number of seconds from 10 to 3600.")
        }
        return TimeInterval(seconds)
    }

    static func listenAddress(_ config: ConfigReader) throws(ConfigurationError) -> (String, Int) {
        let host = config.string(.host) ?? "127.0.0.1"
        guard let portText = config.string(.port) else { return (host, 8080) }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw ConfigurationError("\(variable: .port)=\(portText.prefix(20)) is not a port number (0–65535).")
        }
        return (host, port)
    }
}
