import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning

extension ServiceConfiguration {
    /// The `serve --demo` configuration: a freshly generated throw-away key (`DEMOKEY001`), the demo app
    /// `com.example.offersigner.demo` with the demo policy (offers, rules, retention entries, a retention experiment), an
    /// in-memory store, a spare key (`DEMOKEY002`), the admin token ``demoAdminToken`` unless the environment names
    /// others, and — with `appStore` — App Store data (Sandbox) signed by the demo's own chain, whose root is the only
    /// one trusted; the listen address from the environment.
    public static func demo(environment: [String: String] = [:], appStore: DemoAppStore? = nil) throws(ConfigurationError) -> ServiceConfiguration {
        let (host, port) = try listenAddress(reader(environment))
        // The console and the admin API open with the demo's public token unless the environment names tokens.
        let adminTokens = try BearerTokens(
            parsing: demoUsesItsOwnAdminToken(environment: environment)
                ? "demo:\(demoAdminToken)" : reader(environment).string(.adminTokens) ?? ""
        )
        let keyRing: KeyRing
        let policy: OfferPolicy
        do {
            // A second key, not active, to try a rotation with (the console's Keys page, `keys activate`).
            keyRing = try KeyRing(
                keys: [
                    .init(key: try SigningKey.generate(keyIdentifier: "DEMOKEY001"), source: "generated for --demo"),
                    .init(key: try SigningKey.generate(keyIdentifier: "DEMOKEY002"), source: "generated for --demo (spare)"),
                ],
                activeKeyIdentifier: "DEMOKEY001"
            )
        } catch {
            throw ConfigurationError(.invalidConfiguration, error.message)
        }
        do {
            policy = try OfferPolicy(text: Demo.policyText)
        } catch {
            throw ConfigurationError(.invalidConfiguration, "the demo policy: \(error.message)")
        }
        var configuration = ServiceConfiguration(
            host: host,
            port: port,
            apps: [AppConfiguration(bundleIdentifier: demoBundleIdentifier, issuerIdentifier: Demo.issuerIdentifier, appAppleId: Demo.appAppleId)],
            keyRing: keyRing,
            // Always in memory: the demo seeds customers at every start and must never write into a real store.
            databaseURL: "sqlite::memory:",
            isDemo: true,
            warnings: [
                """
                DEMO MODE: signing with a throw-away key generated at start-up, for a made-up issuer; App Store data is trusted only from the \
                demo's own certificate chain. The App Store will refuse these signatures. Do not use in production.
                """
            ],
            adminTokens: adminTokens,
            policy: policy
        )
        if reader(environment).string(.databaseUrl) != nil {
            configuration.warnings.append("\(variable: .databaseUrl) is ignored by the demo: it keeps its customers in memory.")
        }
        if let appStore {
            configuration.trustedRoots = [appStore.root]
            configuration.environments = [.sandbox]
            configuration.addOn = appStore.addOn
        }
        configuration.connectionLimits = try connectionLimits(reader(environment))
        configuration.retentionDeadline = try retentionDeadline(reader(environment))
        configuration.appStoreClockSkew = try appStoreClockSkew(reader(environment))
        configuration.decisionLogDays = try decisionLogDays(reader(environment))
        configuration.rateLimits = try rateLimits(reader(environment))
        configuration.operationsListener = try operationsListener(reader(environment), publicPort: port)
        configuration.warnings.append("The demo's client mode is open: /v1/offers/* needs no credential.")
        configuration.warnings += ConfigurationVariable.unknownVariableWarnings(in: environment)
        return configuration
    }

    /// The bundle identifier of the demo app.
    public static let demoBundleIdentifier = "com.example.offersigner.demo"

    /// Whether `serve --demo` with this environment signs admins in with ``demoAdminToken``.
    public static func demoUsesItsOwnAdminToken(environment: [String: String]) -> Bool {
        (reader(environment).string(.adminTokens) ?? "").isEmpty
    }
}

extension DemoAppStore {
    /// What the demo adds to the service: `/demo/*` (described in `/openapi.yaml`), its customers and their weeks
    /// of history seeded through the service and the notification endpoint's code at start-up (``DemoHistory``), and
    /// readable `appAccountToken`s.
    public var addOn: ServiceAddOn {
        let appStore = self
        return ServiceAddOn(
            name: "the demo",
            describesDemoRoutes: true,
            readableTokens: true,
            registerRoutes: { router, useCases in DemoRoutes(customers: useCases.customerView, appStore: appStore).register(on: router) },
            prepare: { useCases in
                guard let notifications = useCases.notifications, let customers = useCases.customerView else { return }
                try await Demo.seed(notifications, view: customers, appStore: appStore)
                try await DemoHistory.seed(useCases, notifications: notifications, customers: customers, appStore: appStore)
            }
        )
    }
}

extension DemoAppStore {
    /// The demo's App Store for `serve --demo`: a chain generated now, shaped like Apple's, that only this process
    /// trusts.
    public static func generate() throws(ConfigurationError) -> DemoAppStore {
        do {
            // Valid for a year either side of now: the demo's customers have histories months long.
            var options = TestCertificateChain.Options()
            let window = Date().addingTimeInterval(-366 * 86_400)...Date().addingTimeInterval(366 * 86_400)
            (options.rootValidity, options.intermediateValidity, options.leafValidity) = (window, window, window)
            options.rootCommonName = "OfferSigner Demo App Store Root (serve --demo only)"
            let signer = TestJWSSigner(chain: try TestCertificateChain(options))
            return DemoAppStore(root: signer.chain.root) { payload in try await signer.sign(payload) }
        } catch {
            throw ConfigurationError(.invalidConfiguration, "the demo could not make its certificate chain: \(error)")
        }
    }
}
