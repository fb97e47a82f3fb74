import AppStoreNotifications
import AppStoreServerAPI
import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel
import OfferSignerServer
import OfferSigning

extension RetentionCommand {
    /// `offer-signer retention sync`: Apple's catalogue made to match the policy's (``RetentionCatalogueSync``).
    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Uploads the policy's retention messages and images Apple does not have (under identifiers derived from their content: a second \
                run uploads nothing), configures each product's default message per locale once approved, and records Apple's approval states \
                in the store (\(variable: .policy), \(variable: .databaseUrl), the App Store Server API's variables).
                """,
            discussion: "Exit status 0 done, 2 when a step fails (the message and its code are on standard error)."
        )

        @OptionGroup var target: CatalogueTarget

        @Flag(name: .customLong("delete-dropped"), help: "Also delete the messages, then the images, Apple has and the policy no longer declares.")
        var deleteDropped = false

        func run() async throws {
            try await target.withRetention { (retention, target) async throws(RetentionMessagingError) in
                let logger = Logger(label: "offer-signer")
                let report = try await retention.sync(target, deleteDropped: deleteDropped, by: nil, logger: logger) { line in print(line) }
                CatalogueTarget.print(report)
            }
        }
    }

    /// `offer-signer retention status`: Apple's approval state of each item, beside the policy.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Shows each retention message and image of the policy with Apple's approval state (PENDING, APPROVED, REJECTED, NOT_SENT), and \
                records it in the store.
                """
        )

        @OptionGroup var target: CatalogueTarget

        func run() async throws {
            try await target.withRetention { (retention, target) async throws(RetentionMessagingError) in
                CatalogueTarget.print(try await retention.status(target))
            }
        }
    }
}

/// The app and environment a catalogue command works on.
struct CatalogueTarget: ParsableArguments {
    @Option(name: .customLong("environment"), help: "Production or Sandbox (Sandbox approves at once).")
    var environment: String = "Production"

    @Option(name: .customLong("bundle-id"), help: "The app (default: the only one).")
    var bundleIdentifier: String?

    func validate() throws {
        guard ["production", "sandbox"].contains(environment.lowercased()) else {
            throw ValidationError("--environment must be Production or Sandbox.")
        }
    }

    /// Opens the configuration, policy and store, runs `body` with the retention use case and the app and environment
    /// it works on, closes the store.
    func withRetention(
        _ body: (RetentionAdministration, RetentionAdministration.Target) async throws(RetentionMessagingError) -> Void
    ) async throws {
        let (configuration, useCases, made) = try await openRetentionUseCases(bundleIdentifier: bundleIdentifier)
        do {
            guard let policy = configuration.policy else {
                throw ValidationError("No policy (\(variable: .policy)): there is no retention catalogue.")
            }
            let bundle = try made.get()
            guard policy.app(bundle) != nil else { throw ValidationError("\(bundle) is not an app of the policy.") }
            let target = try useCases.retention.target(bundleIdentifier: bundle, environment: environment)
            do {
                try await body(useCases.retention, target)
            } catch {
                FileHandle.standardError.write(Data("\(error.message) [\(error.code.rawValue)]\n".utf8))
                throw ExitCode(2)
            }
            try await useCases.closeStore()
        } catch {
            try? await useCases.closeStore()
            throw error
        }
    }

    static func print(_ report: RetentionCatalogueSync.Report) {
        Swift.print(
            """
            \(report.environment): \(report.uploaded.count) uploaded, \(report.deleted.count) deleted, \(report.defaultsSet.count) defaults \
            set, \(report.defaultsWaiting.count) waiting for approval
            """
        )
        for item in report.items {
            let kind = item.kind.padding(toLength: 8, withPad: " ", startingAt: 0)
            let state = item.state.padding(toLength: 10, withPad: " ", startingAt: 0)
            Swift.print("  \(kind)\(state)\(item.identifier)  \(item.inPolicy ? item.name : "(not in the policy)")")
        }
    }
}

/// The use cases of a retention command (``openUseCases(readOnly:retentionMessaging:)``) with Retention Messaging
/// set up for the app it works on, and that app: or why there is none (no API configuration, no such app), thrown
/// when the command asks for it, after the store is open, so that the caller closes it.
func openRetentionUseCases(
    bundleIdentifier: String?
) async throws -> (ServiceConfiguration, OfferSignerUseCases, bundle: Result<String, any Error>) {
    var made: Result<(setup: RetentionMessagingSetup, bundle: String), any Error> = .failure(ValidationError("No configuration was read."))
    let (configuration, useCases) = try await openUseCases { configuration, store in
        made = Result { () throws -> (setup: RetentionMessagingSetup, bundle: String) in
            let (configurations, bundle, logger) = try retentionConfiguration(configuration, bundleIdentifier: bundleIdentifier)
            do {
                return (try RetentionMessagingSetup(configurations: configurations, applicationStore: store, logger: logger), bundle)
            } catch let error as any CodedError {
                throw ValidationError(error.message)
            }
        }
        return try? made.get().setup
    }
    return (configuration, useCases, made.map(\.bundle))
}

/// The App Store Server API's configuration of the app a command names (`--bundle-id`, default the only one), in
/// both environments, for its ``RetentionMessagingSetup``: the configurations by bundle ID, the app, and the logger
/// the setup logs with.
func retentionConfiguration(
    _ configuration: ServiceConfiguration,
    bundleIdentifier: String?
) throws -> (configurations: [String: AppStoreServerAPIConfiguration], bundle: String, logger: Logger) {
    var logger = Logger(label: "offer-signer")
    logger.logLevel = .warning
    guard let settings = configuration.appStoreAPI else {
        throw ValidationError("\(variable: .appStoreApiKeyId) is not set: the App Store Server API is not configured (docs/app-store-api.md).")
    }
    let bundle = bundleIdentifier ?? (configuration.apps.count == 1 ? configuration.apps[0].bundleIdentifier : nil)
    guard let bundle, let app = configuration.apps.first(where: { $0.bundleIdentifier == bundle }) else {
        throw ValidationError(
            bundleIdentifier == nil
                ? "Several apps are served: name one with --bundle-id." : "\(bundleIdentifier ?? "") is not an app this server serves."
        )
    }
    do {
        let apiConfiguration = try settings.clientConfiguration(for: app, environments: [.production, .sandbox])
        return ([bundle: apiConfiguration], bundle, logger)
    } catch {
        throw ValidationError(error.message)
    }
}
