import AppStoreNotifications
import AppStoreServerAPI
import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferErrors
import OfferSignerServer

extension RetentionCommand {
    /// `offer-signer retention go-live`: the Sandbox URL, Apple's performance test, and Production's URL on PASS.
    struct GoLive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "go-live",
            abstract: "Configures the Sandbox real-time URL, runs Apple's performance test and polls it to its result, prints the percentiles, and on PASS only configures the Production real-time URL. Needs \(variable: .appStoreApiKeyId) and the variables of docs/app-store-api.md.",
            discussion: "Exit status 0 when live in Production, 1 when the test failed (nothing changed in Production), 2 when a step could not be done (the message says which and why).")

        @Option(name: .customLong("url"), help: "The Production URL of POST /v1/retention/appstore (https://, at most 256 characters).")
        var productionURL: String

        @Option(name: .customLong("sandbox-url"), help: "The Sandbox URL (Apple recommends a separate one); default: --url.")
        var sandboxURL: String?

        @Option(name: .customLong("transaction"), help: "The original transaction identifier of an active auto-renewable subscription bought in Sandbox.")
        var originalTransactionId: String

        @Option(name: .customLong("request-id"), help: "Poll this performance test (already started) instead of starting one.")
        var requestId: String?

        @Option(name: .customLong("bundle-id"), help: "The app (default: the only one).")
        var bundleIdentifier: String?

        @Option(name: .customLong("poll-seconds"), help: "Seconds between two polls of the result (at least 10: Sandbox allows one request every 10 s).")
        var pollSeconds: Int = 15

        @Option(name: .customLong("timeout-minutes"), help: "How long to poll at most.")
        var timeoutMinutes: Int = 60

        func validate() throws {
            guard pollSeconds >= 10, pollSeconds <= 600 else { throw ValidationError("--poll-seconds must be 10 to 600.") }
            guard timeoutMinutes >= 1, timeoutMinutes <= 24 * 60 else { throw ValidationError("--timeout-minutes must be 1 to 1440.") }
        }

        func run() async throws {
            var logger = Logger(label: "offer-signer")
            logger.logLevel = .warning
            let sandbox: RetentionMessagingClient
            let production: RetentionMessagingClient
            do {
                let configuration = try ServiceConfiguration(environment: ConfigurationVariable.processEnvironment, requireKeys: false)
                guard let settings = configuration.appStoreAPI else {
                    throw ValidationError("\(variable: .appStoreApiKeyId) is not set: the App Store Server API is not configured (docs/app-store-api.md).")
                }
                let bundle = bundleIdentifier ?? (configuration.apps.count == 1 ? configuration.apps[0].bundleIdentifier : nil)
                guard let bundle, let app = configuration.apps.first(where: { $0.bundleIdentifier == bundle }) else {
                    throw ValidationError(bundleIdentifier == nil ? "Several apps are served: name one with --bundle-id." : "\(bundleIdentifier ?? "") is not an app this server serves.")
                }
                let apiConfiguration = try settings.clientConfiguration(for: app, environments: [.production, .sandbox])
                sandbox = try RetentionMessagingClient(configuration: apiConfiguration, environment: .sandbox, logger: logger)
                production = try RetentionMessagingClient(configuration: apiConfiguration, environment: .production, logger: logger)
            } catch let error as ValidationError {
                throw error
            } catch let error as any CodedError {
                throw ValidationError(error.message)
            }
            let goLive = RetentionGoLive(sandbox: sandbox, production: production)
            do {
                let outcome = try await goLive.run(
                    productionURL: productionURL, sandboxURL: sandboxURL, originalTransactionId: originalTransactionId,
                    resumeRequestId: requestId, pollInterval: .seconds(pollSeconds), timeout: .seconds(timeoutMinutes * 60)
                ) { line in print(line) }
                switch outcome {
                case .live: return
                case .failed, .inconclusive: throw ExitCode(1)
                }
            } catch let error as RetentionMessagingError {
                FileHandle.standardError.write(Data("\(error.message) [\(error.code.rawValue)]\n".utf8))
                throw ExitCode(2)
            }
        }
    }
}
