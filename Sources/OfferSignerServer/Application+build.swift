import AppStoreNotifications
import AppStoreServerAPI
import AsyncHTTPClient
import Hummingbird
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import Prometheus
import ServiceLifecycle
import UnixSignals

/// Which routes a listener serves.
public enum RouterPart: Sendable {
    /// Everything on one port (no `OFFER_SIGNER_ADMIN_PORT`).
    case all
    /// The public port when an operations listener is configured: `/v1/*`, `/healthz`, `/readyz`,
    /// `/openapi.yaml`, `/.well-known/jwks.json`.
    case publicOnly
    /// The operations listener: `/admin/*`, `/console/*`, `/metrics`, `/healthz`, `/readyz`.
    case operationsOnly
}

/// Builds the router with the routes of the API.
/// - Parameters:
///   - useCases: the application: the signing service and the use cases the admin API and the console call (with a
///     key manager, the admin key routes `/admin/keys…`; without one they are left out).
///   - adminTokens: who may call `/admin` and sign in to `/console`.
///   - metricsRegistry: where `/metrics` reads from; `nil` leaves `/metrics` out (tests).
///   - authenticator: checks `/v1/offers/*` credentials; `nil` is the open mode (tests).
///   - rateLimits: the limits of this replica.
///   - part: which routes (one port serves all; with an operations listener each port serves its part).
///   - addOn: what an embedder adds (`serve --demo`: `/demo/*`, described in `/openapi.yaml`); `nil` for none.
public func buildRouter(
    useCases: OfferSignerUseCases,
    adminTokens: BearerTokens = .none,
    metricsRegistry: PrometheusCollectorRegistry? = nil,
    authenticator: ClientAuthenticator? = nil,
    rateLimits: RateLimits = RateLimits(.none),
    part: RouterPart = .all,
    addOn: ServiceAddOn? = nil
) -> Router<OfferSignerRequestContext> {
    let router = Router(context: OfferSignerRequestContext.self, options: .autoGenerateHeadEndpoints)
    if RequestTracing.isOn {
        router.add(middleware: RequestTracingMiddleware())  // the request's server span (docs/observability.md, "Traces")
    }
    router.add(middleware: HeadMiddleware())  // HEAD is GET without the body, errors included
    router.add(middleware: RequestLoggingMiddleware())  // the request ID and the access log (docs/observability.md)
    // Metrics outside the error mapping, so that they label the status actually sent (a 400 from the signing
    // core is a 400 in the metrics, not the 500 an unmapped error would count as).
    router.add(middleware: RequestMetricsMiddleware())
    if part != .publicOnly {
        // A /console path no console route matched (404, 405) is answered as a console page, with its headers.
        router.add(middleware: ConsoleHeadersMiddleware(onlyUnder: "/console"))
    }
    let allowedMethods = AllowedMethods()
    router.add(middleware: ErrorMappingMiddleware(allowedMethods: allowedMethods))
    OperationsRoutes(
        signing: useCases.signing,
        health: useCases.health,
        metricsRegistry: part == .publicOnly ? nil : metricsRegistry,
        servesDocuments: part != .operationsOnly,
        describesDemo: addOn?.describesDemoRoutes ?? false
    ).register(on: router)
    if part != .operationsOnly {
        let offers = router.group("/v1/offers")
        if let authenticator {
            offers.add(middleware: ClientAuthenticationMiddleware(authenticator: authenticator, limits: rateLimits))
        } else {
            offers.add(middleware: OpenClientMiddleware())
        }
        OfferRoutes(signing: useCases.signing, verification: useCases.verification, limits: rateLimits).register(on: offers)
        AppStoreRoutes(notifications: useCases.notifications, limits: rateLimits).register(on: router)
        RetentionRoutes(retentionAnswers: useCases.retentionAnswers, limits: rateLimits).register(on: router)
        KeyRoutes(keys: useCases.signing.keys).register(on: router)
        addOn?.registerRoutes(router, useCases)
    }
    if part != .publicOnly {
        // One limiter of failed admin authentications per address, for the admin API and the console's sign-in.
        // Failed admin authentications and console sign-ins, per address: the fleet's buckets on PostgreSQL.
        let failures: any LimitBuckets =
            useCases.sharedLimits.map { shared in
                SharedTokenBuckets(
                    kind: "admin-failures",
                    rate: 1 / AdminAuthenticationMiddleware.secondsPerFailure,
                    burst: AdminAuthenticationMiddleware.failureBurst,
                    store: shared
                )
            } ?? TokenBuckets(rate: 1 / AdminAuthenticationMiddleware.secondsPerFailure, burst: AdminAuthenticationMiddleware.failureBurst)
        let admin = router.group("/admin").add(middleware: AdminAuthenticationMiddleware(tokens: adminTokens, failures: failures))
            .add(middleware: SingleQueryParametersMiddleware())
        if let keys = useCases.keys {
            AdminKeyRoutes(keys: keys).register(on: admin)
        }
        if let customers = useCases.customers, let logs = useCases.logs {
            AdminCustomerRoutes(signing: useCases.signing, customers: customers, logs: logs).register(on: admin)
            AdminOutcomeRoutes(outcomes: useCases.outcomes).register(on: admin)
            AdminExperimentRoutes(experiments: useCases.experiments).register(on: admin)
            AdminPolicyRoutes(policy: useCases.policy).register(on: admin)
            if useCases.retention.canSetUp {
                AdminRetentionRoutes(retention: useCases.retention).register(on: admin)
            }
        }
        // The console: never on the public port (docs/console.md).
        ConsoleRoutes(
            useCases: useCases,
            adminTokens: adminTokens,
            failures: failures,
            sessions: useCases.consoleSessions
        )
        .register(on: router)
    }
    allowedMethods.record(router.routes.map { (path: $0.path.description, method: $0.method.rawValue) })
    return router
}

/// The open mode's identity for every `/v1/offers/*` request (no authenticator: tests, embedders).
struct OpenClientMiddleware: RouterMiddleware {
    func handle(
        _ request: Request,
        context: OfferSignerRequestContext,
        next: (Request, OfferSignerRequestContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.identity = .open
        return try await next(request, context)
    }
}

/// One App Store Server API client per app that has a verifier, when `OFFER_SIGNER_APP_STORE_API_KEY_ID` is set
/// (none otherwise: the API is never asked).
/// - Parameters:
///   - configuration: the service configuration (``ServiceConfiguration/appStoreAPI``).
///   - verifiers: the apps' verifiers (the notification ingestor's), which check every answer.
///   - httpClient: the HTTP client the clients send with.
///   - sharedLimits: where the replicas keep Apple's per-app quota together (PostgreSQL: ``SharedAppStoreQuota``);
///     `nil`: each client keeps it alone.
///   - logger: where to log.
/// - Throws: ``ConfigurationError`` naming the variable at fault.
public func makeAppStoreClients(
    configuration: ServiceConfiguration,
    verifiers: [String: SignedDataVerifier],
    httpClient: HTTPClient = .shared,
    sharedLimits: FleetRateLimits? = nil,
    logger: Logger
) throws(ConfigurationError) -> [String: AppStoreServerAPIClient] {
    guard let settings = configuration.appStoreAPI else { return [:] }
    var clients: [String: AppStoreServerAPIClient] = [:]
    for app in configuration.apps {
        guard let verifier = verifiers[app.bundleIdentifier] else {
            // Said once at start-up by ServiceConfiguration's warnings.
            logger.debug(
                "the App Store Server API is not asked for this app: its App Store data cannot be verified (appAppleId, \(variable: .environments))",
                metadata: [
                    "bundleIdentifier": "\(app.bundleIdentifier)"
                ]
            )
            continue
        }
        let clientConfiguration = try settings.clientConfiguration(for: app, environments: configuration.environments)
        do {
            clients[app.bundleIdentifier] = try AppStoreServerAPIClient(
                configuration: clientConfiguration,
                verifier: verifier,
                httpClient: httpClient,
                quota: sharedLimits.map { SharedAppStoreQuota(clientConfiguration.rateLimit, store: $0) },
                logger: logger
            )
        } catch {
            throw ConfigurationError(.invalidConfiguration, "\(variable: .appStoreApiKeyId) / \(variable: .appStoreApiKeyFile): \(error.message).")
        }
        logger.info(
            "App Store Server API asked for customers the store does not know",
            metadata: [
                "bundleIdentifier": "\(app.bundleIdentifier)", "settings": "\(settings)",
            ]
        )
    }
    return clients
}

/// Re-reads the login-JWT public keys (`OFFER_SIGNER_CLIENT_JWT_KEYS`) on SIGHUP, with the signing keys.
struct ClientKeyReloader: Service {
    let authenticator: ClientAuthenticator
    let logger: Logger

    func run() async throws {
        guard authenticator.configuration.jwtKeysPath != nil else {
            try? await gracefulShutdown()
            return
        }
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            do {
                try await authenticator.reloadPublicKeys()
                logger.notice("login-token public keys reloaded (\(variable: .clientJwtKeys))")
            } catch {
                logger.error("login-token public keys not reloaded; the previous ones keep serving", metadata: ["error": "\(error.message)"])
            }
        }
    }
}

/// Builds the application for a configuration.
///
/// ## Usage
///
/// ```swift
/// let configuration = try ServiceConfiguration(environment: ConfigurationVariable.processEnvironment)
/// let app = buildApplication(configuration: configuration, logger: Logger(label: "offer-signer"))
/// try await app.runService()
/// ```
///
/// Besides the HTTP server it runs the key reload triggers: SIGHUP, and a watcher of `OFFER_SIGNER_KEYS_DIR`.
/// - Throws: ``ConfigurationError`` when the saved key states cannot be read or applied.
public func buildApplication(
    configuration: ServiceConfiguration,
    logger: Logger,
    metricsRegistry: PrometheusCollectorRegistry? = nil,
    keysDirectoryPollInterval: Duration = .seconds(2)
) async throws -> some ApplicationProtocol {
    let (store, notifications) = try await openStore(configuration: configuration, logger: logger, serving: true)
    let appStoreClients: [String: AppStoreServerAPIClient]
    do {
        appStoreClients = try makeAppStoreClients(
            configuration: configuration,
            verifiers: notifications?.verifiers ?? [:],
            sharedLimits: store?.sharedLimits,
            logger: logger
        )
    } catch {
        try? await store?.close()
        throw error
    }
    // The fleet's policy when one was applied to the store; else the file's (StorePolicy says how the two meet).
    var inForce = PolicyInForce(policy: configuration.policy)
    if let store {
        do {
            if let stored = try await store.storedPolicy() {
                if let file = configuration.policy, file.version != stored.policy?.version {
                    logger.warning(
                        """
                        the policy file differs from the policy applied to the store; the store's is in force on every replica (apply the file \
                        with `offer-signer policy apply` to change it)
                        """,
                        metadata: [
                            "fileVersion": "\(file.version)", "storeVersion": "\(stored.policy?.version ?? "none")", "revision": "\(stored.revision)",
                        ]
                    )
                }
                inForce = stored
            }
        } catch {
            try? await store.close()
            throw ConfigurationError(.invalidConfiguration, error.message)
        }
    }
    let pipeline = SigningPipeline(
        apps: configuration.apps,
        keyRing: configuration.keyRing,
        policy: inForce.policy,
        policyRevision: inForce.revision,
        applicationStore: store,
        notifications: notifications,
        appStoreClients: appStoreClients
    )
    // Where admins' key states live: the file if one is configured, else the store (shared by replicas).
    let stateStore: any KeyStateStore =
        configuration.stateFilePath.map { FileKeyStateStore(path: $0) } ?? store?.keyStates ?? InMemoryKeyStateStore()
    let manager: KeyManager
    do {
        manager = try await KeyManager(
            holder: pipeline.keys,
            loadKeys: configuration.loadKeys,
            configuredActiveKeyIdentifier: configuration.configuredActiveKeyIdentifier,
            appActiveKeyIdentifiers: Dictionary(
                (inForce.policy?.apps ?? []).compactMap { app in app.activeKeyIdentifier.map { (app.bundleIdentifier, $0) } },
                uniquingKeysWith: { first, _ in first }
            ),
            stateStore: stateStore,
            logger: logger
        )
    } catch {
        try? await store?.close()  // an open store must be closed before it is dropped
        throw ConfigurationError(.invalidConfiguration, KeyManager.describe(error))
    }
    // The keys as they serve: after the states admins saved (activations, retirements, revocations) are applied.
    let states = await manager.keyStates
    let ring = await manager.keyRing
    let savedIn = configuration.stateFilePath.map { "file \($0)" } ?? (store != nil ? "the store" : "memory")
    logger.notice(
        states.version > 0 ? "key states applied" : "no saved key states; the configured ones apply",
        metadata: [
            "version": "\(states.version)", "from": "\(savedIn)", "active": "\(ring.activeKeyIdentifier ?? "-")",
        ]
    )
    for entry in ring.entries {
        logger.info(
            "key",
            metadata: [
                "keyIdentifier": "\(entry.key.keyIdentifier)", "state": "\(ring.state(of: entry.key.keyIdentifier)?.rawValue ?? "")",
                "fingerprint": "\(entry.key.fingerprint)", "source": "\(entry.source)",
            ]
        )
    }
    let useCases = OfferSignerUseCases(pipeline: pipeline, keyManager: manager, retentionDeadline: configuration.retentionDeadline)
    let authenticator: ClientAuthenticator
    do {
        // The add-on's work before the service answers (the demo seeds its history through the service).
        if let addOn = configuration.addOn, notifications != nil {
            do { try await addOn.prepare(useCases) } catch {
                throw ConfigurationError(.invalidConfiguration, "\(addOn.name) could not prepare: \(error)")
            }
        }
        authenticator = try await ClientAuthenticator(configuration.clientAuth)
    } catch {
        try? await store?.close()
        throw error
    }
    let rateLimits = RateLimits(configuration.rateLimits, shared: store?.sharedLimits)
    var services: [any Service] = [SIGHUPKeyReloader(manager: manager), ClientKeyReloader(authenticator: authenticator, logger: logger)]
    if let store {
        // Closing it at shutdown, the purge, other replicas' key states (when the store keeps them) and the fleet's policy.
        services += store.services(
            keyManager: configuration.stateFilePath == nil ? manager : nil,
            policy: pipeline.policyHolder,
            servedApps: Set(pipeline.apps.keys),
            clockSkew: configuration.appStoreClockSkew,
            decisionLogDays: configuration.decisionLogDays,
            logger: logger
        )
    }
    if let directory = configuration.keysDirectory {
        services.append(KeyDirectoryWatcher(directory: directory, interval: keysDirectoryPollInterval, manager: manager))
    }
    func router(_ part: RouterPart) -> Router<OfferSignerRequestContext> {
        buildRouter(
            useCases: useCases,
            adminTokens: configuration.adminTokens,
            metricsRegistry: metricsRegistry,
            authenticator: authenticator,
            rateLimits: rateLimits,
            part: part,
            addOn: configuration.addOn
        )
    }
    if let listener = configuration.operationsListener {
        // The operations listener (/admin/*, /metrics) runs beside the public one, as one more service.
        services.append(
            Application(
                router: router(.operationsOnly),
                server: OfferSignerHTTP1Channel.server(limits: configuration.connectionLimits),
                configuration: .init(address: .hostname(listener.host, port: listener.port), serverName: "offer-signer-operations"),
                logger: logger
            )
        )
        logger.notice(
            "operations listener",
            metadata: ["address": "\(listener.host):\(listener.port)", "serves": "/admin/*, /console, /metrics, /healthz, /readyz"]
        )
    }
    if OpenAPIDocument.yaml.isEmpty {
        logger.warning(
            """
            GET /openapi.yaml answers 404: the folder \(OpenAPIDocument.resourceFolder) is not beside the binary; copy it from the build with \
            the binary (scripts/install.sh does)
            """
        )
    }
    return makeApplication(
        router: router(configuration.operationsListener == nil ? .all : .publicOnly),
        // Traced, the router serves every request, so that each is one trace (docs/observability.md, "Traces").
        signing: RequestTracing.isOn
            ? nil : EventLoopSigning(signing: useCases.signing, authenticator: authenticator, limits: rateLimits, serverName: "offer-signer"),
        limits: configuration.connectionLimits,
        configuration: .init(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "offer-signer",
            availableConnectionsDelegate: .maximum(configuration.connectionLimits.maximumConnections, logger: logger)
        ),
        services: services,
        logger: logger
    )
}

/// The public listener's application: the router behind the service's HTTP/1 channel, with the event-loop path of
/// `POST /v1/offers/sign` (``EventLoopSigning``) in every connection's pipeline. What `serve` runs, and what the
/// HTTP tests run live to check that path against the router's answers.
/// - Parameters:
///   - router: the routes (``buildRouter(useCases:adminTokens:metricsRegistry:authenticator:rateLimits:part:addOn:)``).
///   - signing: the event-loop signing path; `nil`: the router serves every request.
///   - limits: idle and request timeouts.
public func makeApplication(
    router: Router<OfferSignerRequestContext>,
    signing: EventLoopSigning?,
    limits: ConnectionLimits = ConnectionLimits(),
    configuration: ApplicationConfiguration = ApplicationConfiguration(),
    services: [any Service] = [],
    logger: Logger
) -> Application<RouterResponder<OfferSignerRequestContext>> {
    Application(
        router: router,
        server: OfferSignerHTTP1Channel.server(limits: limits, signing: signing),
        configuration: configuration,
        services: services,
        logger: logger
    )
}
