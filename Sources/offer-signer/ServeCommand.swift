import ArgumentParser
import Configuration
import Foundation
import Hummingbird
import Logging
import Metrics
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
            configuration = demo ? try .demo(environment: environment) : try ServiceConfiguration(environment: environment)
        } catch {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

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
        let app = try await buildApplication(configuration: configuration, logger: logger, metricsRegistry: registry)
        try await app.runService()
    }
}

func makeLogger() -> Logger {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = (try? configuredLogLevel(ProcessInfo.processInfo.environment)) ?? .info
        return handler
    }
    return Logger(label: "offer-signer")
}
