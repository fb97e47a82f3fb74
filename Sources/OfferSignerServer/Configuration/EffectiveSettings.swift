import AppStoreNotifications
import Configuration
import Foundation
import OfferApplication
import OfferSigning

/// What `offer-signer config check` prints: the settings a configuration runs with, as readable text.
extension ServiceConfiguration {
    /// The variables `serve --demo` reads; it sets the others itself (``demo(environment:appStore:)``).
    static let demoReads: Set<ConfigurationVariable> = [
        .host, .port, .adminTokens, .idleTimeout, .requestTimeout, .maxConnections, .retentionDeadline, .appStoreClockSkew,
        .decisionLogDays,
        .rateLimitClient, .rateLimitCustomer, .rateLimitAppStore, .adminHost, .adminPort, .logLevel, .logFormat, .logHashKey,
        .url, .adminToken,
    ]

    /// The effective settings, one `NAME = value` line per variable of ``ConfigurationVariable`` (in its order), then
    /// one line per app and one per signing key.
    ///
    /// A variable the environment does not set shows the value in force and `(default)`; a secret
    /// (``ConfigurationVariable/isSecret``) shows `<redacted>`; with `--demo`, a variable the demo does not read says
    /// so. Keys appear by identifier, state, fingerprint and source, never their material.
    /// - Parameter environment: the environment this configuration was read from.
    public func effectiveSettings(environment: [String: String]) -> [String] {
        let config = ConfigurationVariable.reader(environment)
        var lines: [String] = []
        for variable in ConfigurationVariable.allCases {
            let given = config.string(variable).map { variable.isSecret ? "<redacted>" : Self.oneLine(Self.withoutPassword($0)) }
            let value: String
            if isDemo, !Self.demoReads.contains(variable) {
                value = given.map { "\($0) (ignored by --demo)" } ?? "(not read by --demo)"
            } else {
                value = given ?? "\(defaultDescription(of: variable)) (default)"
            }
            lines.append("\(variable: variable) = \(value)")
        }
        for app in apps {
            lines.append(
                "app \(app.bundleIdentifier) = issuer ID \(app.issuerIdentifier ?? "none"), Apple ID \(app.appAppleId.map(String.init) ?? "none")"
            )
        }
        for entry in keyRing.entries {
            let state = keyRing.state(of: entry.key.keyIdentifier)?.rawValue ?? "unknown"
            lines.append("key \(entry.key.keyIdentifier) = \(state), fingerprint \(entry.key.fingerprint), source: \(entry.source)")
        }
        return lines
    }

    /// What a variable the environment does not set amounts to in this configuration.
    private func defaultDescription(of variable: ConfigurationVariable) -> String {
        switch variable {
        case .bundleIdentifier: "none: the apps of the policy"
        case .keysDir, .issuerId, .appAppleId, .apiKeys, .clientJwtSecret, .clientJwtKeys, .adminToken: "none"
        case .activeKeyId: keyRing.activeKeyIdentifier.map { "none: \($0), the only key" } ?? "none"
        case .host: host
        case .port: "\(port)"
        case .policy: "none: every well-formed request is signed"
        case .databaseUrl: databaseURL ?? "none"
        case .storeTimeout: ConfigReader.describe(storeTimeout)
        case .environments: environments.map(\.rawValue).sorted().joined(separator: ",")
        case .trustedRoots: "the bundled Apple Root CA - G3"
        case .adminTokens:
            isDemo && !adminTokens.isEmpty
                ? "the demo's own admin, demo, with the public token serve --demo prints" : "none: /admin refuses every request"
        case .stateFile: databaseURL == nil ? "none: in memory" : "none: in the store"
        case .idleTimeout: "\(connectionLimits.idleTimeout.components.seconds)"
        case .requestTimeout: "\(connectionLimits.requestTimeout.components.seconds)"
        case .maxConnections: "\(connectionLimits.maximumConnections)"
        case .retentionDeadline: "\(retentionDeadline.components.seconds * 1000 + retentionDeadline.components.attoseconds / 1_000_000_000_000_000)"
        case .appStoreClockSkew: "\(Int(appStoreClockSkew))"
        case .decisionLogDays: "\(decisionLogDays)"
        case .clientJwtIssuer, .clientJwtAudience: "none: not checked"
        case .clientJwtCustomerClaim: clientAuth.customerClaim
        case .clientAuth: clientAuth.isOpen ? "none: open" : "credentials required"
        case .rateLimitClient: rateLimits.client.map { "\($0) for login JWTs" } ?? "none"
        case .rateLimitCustomer: rateLimits.customer.map { "\($0) for login JWTs" } ?? "none"
        case .rateLimitAppStore: rateLimits.appStore.map(\.description) ?? "none"
        case .appStoreApiKeyId: "none: Apple is never asked"
        case .appStoreApiKeyFile: appStoreAPI.map { "none: \($0.keySource)" } ?? "none"
        case .appStoreApiUrl: "Apple's hosts"
        case .appStoreApiTimeout: ConfigReader.describe(appStoreAPI?.timeout ?? .seconds(2))
        case .appStoreApiCacheTtl: ConfigReader.describe(appStoreAPI?.cacheTimeToLive ?? .seconds(60))
        case .adminHost: operationsListener?.host ?? "127.0.0.1"
        case .adminPort: "none: one port serves all"
        case .logLevel: "info"
        case .logFormat: "json when standard error is not a terminal, else text"
        case .logHashKey: "a random key per process"
        case .url: "http://127.0.0.1:8080"
        }
    }

    /// A URL's password (`https://user:secret@host`) as `<redacted>`; any other value as it is.
    static func withoutPassword(_ value: String) -> String {
        guard value.contains("@") else { return value }
        guard let components = URLComponents(string: value) else { return "<redacted>" }  // unreadable: it may hold one
        guard let password = components.percentEncodedPassword else { return value }
        guard let range = value.range(of: ":\(password)@") else { return "<redacted>" }
        return value.replacingCharacters(in: range, with: ":<redacted>@")
    }

    /// A value on one line: line breaks written as `\n`.
    private static func oneLine(_ text: String) -> String {
        text.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    }
}
