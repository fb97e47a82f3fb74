import Hummingbird
import Logging
import OfferSigning
import Prometheus

/// Builds the router with every route of the API.
/// - Parameters:
///   - service: the signing service.
///   - metricsRegistry: where `/metrics` reads from; `nil` leaves `/metrics` out (tests).
public func buildRouter(service: OfferService, metricsRegistry: PrometheusCollectorRegistry? = nil) -> Router<OfferSignerRequestContext> {
    let router = Router(context: OfferSignerRequestContext.self)
    router.add(middleware: ErrorMappingMiddleware())
    router.add(middleware: MetricsMiddleware())
    OfferRoutes(service: service).register(on: router)
    KeyRoutes(service: service).register(on: router)
    OperationsRoutes(service: service, metricsRegistry: metricsRegistry).register(on: router)
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
public func buildApplication(
    configuration: ServiceConfiguration,
    logger: Logger,
    metricsRegistry: PrometheusCollectorRegistry? = nil
) -> some ApplicationProtocol {
    let service = OfferService(apps: configuration.apps, keyRing: configuration.keyRing)
    return Application(
        router: buildRouter(service: service, metricsRegistry: metricsRegistry),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "offer-signer"),
        logger: logger
    )
}
