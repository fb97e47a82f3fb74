import Hummingbird
import Logging
import OfferSigning
import Prometheus
import ServiceLifecycle

/// Builds the router with every route of the API.
/// - Parameters:
///   - service: the signing service.
///   - metricsRegistry: where `/metrics` reads from; `nil` leaves `/metrics` out (tests).
///   - keyManager: enables the admin key routes (`/admin/keys…`); `nil` leaves them out.
///   - adminTokens: who may call `/admin`.
public func buildRouter(
    service: OfferService, keyManager: KeyManager? = nil, adminTokens: AdminTokens = .none,
    metricsRegistry: PrometheusCollectorRegistry? = nil
) -> Router<OfferSignerRequestContext> {
    let router = Router(context: OfferSignerRequestContext.self)
    router.add(middleware: ErrorMappingMiddleware())
    router.add(middleware: MetricsMiddleware())
    OfferRoutes(service: service).register(on: router)
    KeyRoutes(service: service).register(on: router)
    OperationsRoutes(service: service, metricsRegistry: metricsRegistry).register(on: router)
    let admin = router.group("/admin").add(middleware: AdminAuthenticationMiddleware(tokens: adminTokens))
    if let keyManager {
        AdminKeyRoutes(service: service, manager: keyManager).register(on: admin)
    }
    if let store = service.store {
        AdminCustomerRoutes(service: service, store: store).register(on: admin)
    }
    return router
}

/// Builds the application for a configuration.
///
/// ## Usage
///
/// ```swift
/// let configuration = try ServiceConfiguration(environment: ProcessInfo.processInfo.environment)
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
    let service = OfferService(apps: configuration.apps, keyRing: configuration.keyRing, policy: configuration.policy)
    let stateStore: any KeyStateStore = configuration.stateFilePath.map { FileKeyStateStore(path: $0) } ?? InMemoryKeyStateStore()
    let manager = try await KeyManager(
        holder: service.keys, loadKeys: configuration.loadKeys,
        configuredActiveKeyIdentifier: configuration.configuredActiveKeyIdentifier,
        stateStore: stateStore, logger: logger)
    var services: [any Service] = [SIGHUPKeyReloader(manager: manager)]
    if let directory = configuration.keysDirectory {
        services.append(KeyDirectoryWatcher(directory: directory, interval: keysDirectoryPollInterval, manager: manager))
    }
    return Application(
        router: buildRouter(service: service, keyManager: manager, adminTokens: configuration.adminTokens, metricsRegistry: metricsRegistry),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "offer-signer"),
        services: services,
        logger: logger
    )
}
