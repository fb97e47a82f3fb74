import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning

/// The use cases a tool runs (``OfferSignerUseCases/forTools(apps:policy:store:notifications:retentionMessaging:)``),
/// over the store the same OFFER_SIGNER_* variables as `serve` name (keys not needed), and the configuration read.
/// `readOnly`: see ``openApplicationStore(readOnly:)``.
func openUseCases(
    readOnly: Bool = false,
    retentionMessaging: (ServiceConfiguration, ApplicationStore?) throws -> RetentionMessagingSetup? = { _, _ in nil }
) async throws -> (ServiceConfiguration, OfferSignerUseCases) {
    let (configuration, store, notifications) = try await openApplicationStore(readOnly: readOnly)
    let setup: RetentionMessagingSetup?
    do {
        setup = try retentionMessaging(configuration, store)
    } catch {
        try? await store?.close()
        throw error
    }
    let useCases = OfferSignerUseCases.forTools(
        apps: configuration.apps,
        policy: configuration.policy,
        store: store,
        notifications: notifications,
        retentionMessaging: setup
    )
    return (configuration, useCases)
}

/// Opens the store a command needs from the same OFFER_SIGNER_* variables as `serve` (keys not needed), as the
/// application sees it. `readOnly`: a command that only reads (a dry-run, an explanation) refuses a SQLite file
/// that does not exist, which opening would create empty, answering as if the log were.
func openApplicationStore(readOnly: Bool = false) async throws -> (ServiceConfiguration, ApplicationStore?, NotificationIngestor?) {
    var logger = Logger(label: "offer-signer")
    logger.logLevel = .warning
    let configuration: ServiceConfiguration
    do {
        configuration = try ServiceConfiguration(environment: ConfigurationVariable.processEnvironment, requireKeys: false)
    } catch {
        throw ValidationError(error.message)
    }
    if readOnly, let url = configuration.databaseURL, url.hasPrefix("sqlite:"), url != "sqlite::memory:" {
        let path = String(url.dropFirst("sqlite:".count))
        guard FileManager.default.fileExists(atPath: path) else {
            throw ValidationError("\(variable: .databaseUrl)=\(url) names no store: \(path) does not exist. Point it at the service's store.")
        }
    }
    let (store, notifications) = try await openStore(configuration: configuration, logger: logger)
    return (configuration, store, notifications)
}

/// A command's input file; `-` is standard input.
func readInput(_ file: String) throws -> Data {
    if file == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("Cannot read \(file).") }
    return data
}

struct EligibilityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eligibility",
        abstract: "Explains eligibility decisions from a terminal.",
        subcommands: [Explain.self]
    )

    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Lists every offer of the policy with its decision and reasons for one customer, from the store (\(variable: .policy), \
                \(variable: .databaseUrl)).
                """
        )

        @Option(name: .customLong("username"), help: "The applicationUsername.")
        var applicationUsername: String

        @Option(name: .customLong("bundle-id"), help: "The app (default: the only one).")
        var bundleIdentifier: String?

        @Option(name: .customLong("product-id"), help: "Only this product's offers.")
        var productIdentifier: String?

        func run() async throws {
            let (configuration, useCases) = try await openUseCases(readOnly: true)
            guard configuration.policy != nil else {
                try? await useCases.closeStore()
                throw ValidationError("No policy (\(variable: .policy)): every well-formed request is signed; there is nothing to explain.")
            }
            do {
                let entries = try await useCases.signing.eligibility(
                    bundleIdentifier: bundleIdentifier,
                    applicationUsername: applicationUsername,
                    productIdentifier: productIdentifier,
                    exposes: false
                )
                let key = CustomerKey(
                    bundleIdentifier: try useCases.signing.app(named: bundleIdentifier).bundleIdentifier,
                    applicationUsername: applicationUsername
                )
                let known = try await useCases.customerView?.facts(of: key) != nil
                print("\(key)\(known ? "" : " (not known to the store: no subscription on record)")")
                for entry in entries {
                    let experiment = entry.experiment.map { " (experiment \($0.id), variant \($0.variant))" } ?? ""
                    print("  \(entry.eligible ? "eligible    " : "not eligible") \(entry.productIdentifier) / \(entry.offerIdentifier)\(experiment)")
                    for reason in entry.reasons { print("      \(reason.rule): \(reason.message) [\(reason.code)]") }
                }
            } catch let error as OfferServiceError {
                try? await useCases.closeStore()
                throw ValidationError(error.message)
            }
            try await useCases.closeStore()
        }
    }
}

struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Works with App Store Server Notifications.",
        subcommands: [Import.self]
    )

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Replays captured notifications into the store (back-fills): one signedPayload per line, bare or as {\"signedPayload\": …}. Each \
                is verified; duplicates change nothing. Exit status 1 if any line was refused.
                """
        )

        @Argument(help: "The file; - reads standard input.")
        var file: String

        func run() async throws {
            let (_, useCases) = try await openUseCases()
            guard let notifications = useCases.notifications else {
                try? await useCases.closeStore()
                throw ValidationError(
                    """
                    Notifications need a store (\(variable: .databaseUrl)) and an app that can verify them (\(variable: .environments), \
                    appAppleId for Production).
                    """
                )
            }
            let data = try readInput(file)
            let summary = await notifications.replay(String(decoding: data, as: UTF8.self))
            for problem in summary.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            try await useCases.closeStore()
            print(summary.description)
            if summary.refused + summary.failed > 0 { throw ExitCode(1) }
        }
    }
}
