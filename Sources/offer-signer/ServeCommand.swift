import AppStoreTestSupport
import ArgumentParser
import Configuration
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import OfferApplication
import OfferErrors
import OfferSignerDemo
import OfferSignerServer
import OfferSigning
import Prometheus
import ServiceLifecycle
import UnixSignals

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Runs the HTTP service.",
        discussion:
            """
            Reads \(ConfigurationVariable.environmentPrefix)* variables. With --demo, signs with a throw-away key for a demo app: nothing to \
            configure, nothing the App Store accepts.
            """
    )

    @Flag(help: "Start with a freshly generated throw-away key and a demo app. Never for production.")
    var demo = false

    @Option(
        name: .customLong("pid-file"),
        help:
            """
            Write the process ID to this file once the service is configured (removed on exit), so that `kill -HUP \"$(cat FILE)\"` reloads the \
            keys of this process only.
            """
    )
    var pidFile: String?

    /// The commands the demo suggests at start-up (the README's quick start runs the same).
    private func demoCommands(base: String) -> [String] {
        let json = "-H 'Content-Type: application/json'"
        return [
            "curl -s \(base)/v1/offers/eligibility \(json) -d '{\"applicationUsername\":\"lapsed-user\"}'",
            """
            curl -s \(base)/v1/offers/sign \(json) -d \
            '{\"productIdentifier\":\"com.example.monthly\",\"offerIdentifier\":\"winback_50\",\"applicationUsername\":\"lapsed-user\"}'
            """,
            """
            curl -s \(base)/demo/notifications \(json) -d '{\"applicationUsername\":\"loyal-user\",\"event\":\"auto-renew-off\"}' | curl -s \
            \(base)/v1/notifications/appstore \(json) -d @-
            """,
            """
            curl -s \(base)/demo/retention \(json) -d '{\"applicationUsername\":\"leaving-user\"}' | curl -s \(base)/v1/retention/appstore \
            \(json) -d @-
            """,
        ]
    }

    /// What `serve` reads before it starts anything, in this order: the log level and format, the customer-hash key
    /// and the service configuration (the demo's with `--demo`). `config check` reads through the same function.
    static func readConfiguration(demo: Bool, environment: [String: String]) throws(ConfigurationError) -> ServiceConfiguration {
        _ = try configuredLogLevel(environment)
        _ = try LogFormat.configured(environment)
        if let key = try configuredLogHashKey(environment) { CustomerHash.configure(key: key) }
        return demo ? try .demo(environment: environment, appStore: try DemoAppStore.generate()) : try ServiceConfiguration(environment: environment)
    }

    func run() async throws {
        let environment = ConfigurationVariable.processEnvironment
        let logger = makeLogger()
        let configuration: ServiceConfiguration
        do {
            configuration = try Self.readConfiguration(demo: demo, environment: environment)
        } catch {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory.offerSigner(registry: registry))
        // OpenTelemetry traces, when OTEL_* variables configure an exporter (docs/observability.md): before the
        // application is built, which serves differently when traced.
        let tracing: (any Service)?
        do {
            tracing = try RequestTracing.start(environment: environment, logger: logger)
        } catch {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        }

        if !configuration.isDemo {
            for warning in configuration.warnings { logger.warning("\(warning)") }
        }
        // Each key is logged by buildApplication, in the state it serves in once the saved states are applied.
        let app: any ApplicationProtocol
        do {
            app = try await buildApplication(configuration: configuration, logger: logger, metricsRegistry: registry)
        } catch let error as DependencyUnavailableError {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(69)  // EX_UNAVAILABLE
        } catch let error as ConfigurationError {
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(78)  // EX_CONFIG
        } catch let error as any CodedError {
            // Anything else that stops start-up (the store refusing its migrations, say), in its own words.
            logger.critical("cannot start: \(error.message)")
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        if let pidFile {
            // A SIGHUP that arrives before the reload handler is installed must not stop the process (SIGHUP's
            // default action): the PID file invites one. The handler receives it all the same.
            signal(SIGHUP, SIG_IGN)
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                let running = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                running != getpid(), kill(running, 0) == 0
            {
                logger.critical(
                    "cannot start: --pid-file \(pidFile) names process \(running), which is running; stop it, or give this instance its own PID file."
                )
                throw ExitCode(78)  // EX_CONFIG
            }
            do {
                try "\(getpid())\n".write(toFile: pidFile, atomically: true, encoding: .utf8)
            } catch {
                logger.critical("cannot start: cannot write the --pid-file \(pidFile); give a path in a writable directory.")
                throw ExitCode(78)  // EX_CONFIG
            }
        }
        defer {
            // Only our own PID is removed: another instance may have taken the file over.
            if let pidFile, let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
                text.trimmingCharacters(in: .whitespacesAndNewlines) == "\(getpid())"
            {
                try? FileManager.default.removeItem(atPath: pidFile)
            }
        }
        logDemoWelcome(configuration, environment: environment, logger: logger)
        logger.notice("offer-signer \(OfferSignerCommand.version) starting", metadata: ["address": "\(configuration.host):\(configuration.port)"])
        do {
            if let tracing {
                // The exporter first, so that it stops last: the spans of the last answers are exported.
                try await ServiceGroup(configuration: .init(services: [tracing, app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
                    .run()
            } else {
                try await app.runService()
            }
            // A graceful shutdown (SIGTERM, SIGINT): every answer in flight was sent and every signature recorded.
            logger.notice("offer-signer stopped: connections drained, the store closed")
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL || error.errnoCode == EACCES {
            logger.critical(
                """
                cannot start: cannot listen on \(Self.listeners(configuration)) (\(String(cString: strerror(error.errnoCode)))); set \
                \(variable: .host)/\(variable: .port) (and \(variable: .adminHost)/\(variable: .adminPort)) to a free address, or stop what \
                holds it.
                """
            )
            throw ExitCode(78)  // EX_CONFIG
        } catch let error where error is SocketAddressError || error is SocketAddressError.UnknownHost {
            logger.critical(
                """
                cannot start: cannot resolve the address to listen on, \(Self.listeners(configuration)); set \(variable: .host) (and \
                \(variable: .adminHost)) to an IP address or a name this host resolves.
                """
            )
            throw ExitCode(78)  // EX_CONFIG
        }
    }

    /// The demo's welcome: its warnings, its customers, the commands to try and the console's address. Logged once
    /// the demo's history is seeded (that logs a line per notification), so these are the last lines before the
    /// service listens, not scrolled away above them.
    private func logDemoWelcome(_ configuration: ServiceConfiguration, environment: [String: String], logger: Logger) {
        guard configuration.isDemo else { return }
        let banner = String(repeating: "!", count: 78)
        logger.warning("\(banner)")
        for warning in configuration.warnings { logger.warning("\(warning)") }
        logger.warning("\(banner)")
        let base = "http://\(configuration.host):\(configuration.port)"
        logger.notice(
            """
            demo customers: lapsed-user (left 40 days ago), leaving-user (auto-renew off), loyal-user (8 renewals), new-user (unknown), and a \
            history of subscriber-01…12 and returning-01…04 for the console. Try:
            """
        )
        for line in demoCommands(base: base) { logger.notice("  \(line)") }
        let console = configuration.operationsListener.map { "http://\($0.host):\($0.port)/console" } ?? "\(base)/console"
        if ServiceConfiguration.demoUsesItsOwnAdminToken(environment: environment) {
            logger.notice(
                """
                Console: \(console) — sign in with the demo's admin token \(ServiceConfiguration.demoAdminToken) (public, demo only; set \
                \(variable: .adminTokens) to use your own)
                """
            )
        } else {
            logger.notice("Console: \(console) — sign in with one of the tokens of \(variable: .adminTokens)")
        }
    }

    /// The addresses `serve` listens on, for a message: the public one, and the operations listener's when set.
    private static func listeners(_ configuration: ServiceConfiguration) -> String {
        let main = "\(configuration.host):\(configuration.port)"
        guard let operations = configuration.operationsListener else { return main }
        return "\(main) or the operations listener's \(operations.host):\(operations.port)"
    }
}

/// Bootstraps logging: `LOG_FORMAT` (JSON lines unless standard error is a terminal) at `LOG_LEVEL`. A bad value
/// of either falls back here (the default format, `info`) so that the refusal to start is itself logged, then stops start-up.
func makeLogger() -> Logger {
    let environment = ConfigurationVariable.processEnvironment
    let format = (try? LogFormat.configured(environment)) ?? .forStandardError
    let level = (try? configuredLogLevel(environment)) ?? .info
    LoggingSystem.bootstrap(
        { label, provider in format.standardErrorHandler(label: label, level: level, metadataProvider: provider) },
        metadataProvider: RequestMetadata.provider
    )
    return Logger(label: "offer-signer")
}
