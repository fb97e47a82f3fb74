import ArgumentParser
import Configuration
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import OfferSignerServer
import OfferSigning
import Prometheus

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Runs the HTTP service.",
        discussion: "Reads OFFER_SIGNER_* variables. With --demo, signs with a throw-away key for a demo app: nothing to configure, nothing the App Store accepts."
    )

    @Flag(help: "Start with a freshly generated throw-away key and a demo app. Never for production.")
    var demo = false

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = makeLogger()
        let configuration: ServiceConfiguration
        do {
            _ = try configuredLogLevel(environment)
            _ = try LogFormat.configured(environment)
            if let key = try configuredLogHashKey(environment) { CustomerHash.configure(key: key) }
            configuration = demo ? try .demo(environment: environment) : try ServiceConfiguration(environment: environment)
        } catch {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory.offerSigner(registry: registry))

        if configuration.isDemo {
            let banner = String(repeating: "!", count: 78)
            logger.warning("\(banner)")
            for warning in configuration.warnings { logger.warning("\(warning)") }
            logger.warning("\(banner)")
            logger.notice("try: curl -s -X POST http://\(configuration.host):\(configuration.port)/v1/offers/sign -H 'Content-Type: application/json' -d '{\"productIdentifier\":\"com.example.monthly\",\"offerIdentifier\":\"winback_50\",\"applicationUsername\":\"user-0001\"}'")
        } else {
            for warning in configuration.warnings { logger.warning("\(warning)") }
        }
        for entry in configuration.keyRing.entries {
            logger.info("key loaded", metadata: [
                "keyIdentifier": "\(entry.key.keyIdentifier)", "state": "\(configuration.keyRing.state(of: entry.key.keyIdentifier)?.rawValue ?? "")",
                "fingerprint": "\(entry.key.fingerprint)", "source": "\(entry.source)",
            ])
        }
        let app: any ApplicationProtocol
        do {
            app = try await buildApplication(configuration: configuration, logger: logger, metricsRegistry: registry)
        } catch let error as DependencyUnavailableError {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(69)  // EX_UNAVAILABLE
        } catch let error as ConfigurationError {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
        do {
            try await app.runService()
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL || error.errnoCode == EACCES {
            logger.critical("cannot start: cannot listen on \(configuration.host):\(configuration.port) (\(String(cString: strerror(error.errnoCode)))); set OFFER_SIGNER_HOST/OFFER_SIGNER_PORT (and OFFER_SIGNER_ADMIN_PORT) to a free address, or stop what holds it.")
            throw ExitCode(78)  // EX_CONFIG
        }
    }
}

/// Bootstraps logging: `LOG_FORMAT` (JSON lines unless standard error is a terminal) at `LOG_LEVEL`. A bad value
/// of either falls back here (the default format, `info`) so that the refusal to start is itself logged, then stops start-up.
func makeLogger() -> Logger {
    let environment = ProcessInfo.processInfo.environment
    let format = (try? LogFormat.configured(environment)) ?? .forStandardError
    let level = (try? configuredLogLevel(environment)) ?? .info
    LoggingSystem.bootstrap({ label, provider in format.standardErrorHandler(label: label, level: level, metadataProvider: provider) }, metadataProvider: RequestMetadata.provider)
    return Logger(label: "offer-signer")
}
