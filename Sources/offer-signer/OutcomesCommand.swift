import ArgumentParser
import Foundation
import Logging
import AppStoreNotifications
import AppStoreServerAPI
import OfferApplication
import OfferSignerServer
import OfferStore

struct OutcomesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "What the offers this service signed became (docs/outcomes.md).",
        subcommands: [Backfill.self]
    )

    struct Backfill: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Reads the App Store's notification history (Get Notification History) of the last days and records it as if it had just arrived: customer facts, redemptions and what became of them. Needs the App Store Server API key (\(variable: .appStoreApiKeyId), \(variable: .appStoreApiKeyFile)). Notifications already received change nothing. Exit status 1 if any notification was refused or could not be read.")

        @Option(help: "How many days back, 1 to \(NotificationBackfill.maximumDays) (Apple keeps \(NotificationBackfill.maximumDays)).")
        var days: Int = 30

        func validate() throws {
            guard (1...NotificationBackfill.maximumDays).contains(days) else {
                throw ValidationError("--days must be 1 to \(NotificationBackfill.maximumDays): Apple keeps \(NotificationBackfill.maximumDays) days of notifications.")
            }
        }

        func run() async throws {
            let (configuration, store, notifications) = try await openForTools()
            guard let store, let notifications else {
                throw ValidationError("A backfill needs a store (\(variable: .databaseUrl)) and an app that can verify App Store data (\(variable: .environments), appAppleId for Production).")
            }
            var logger = Logger(label: "offer-signer")
            logger.logLevel = .warning
            let clients: [String: AppStoreServerAPIClient]
            do {
                clients = try makeAppStoreClients(configuration: configuration, verifiers: notifications.verifiers, logger: logger)
            } catch {
                try await store.close()
                throw ValidationError(error.message)
            }
            guard !clients.isEmpty else {
                try await store.close()
                throw ValidationError("A backfill asks the App Store Server API: set \(variable: .appStoreApiKeyId), \(variable: .appStoreApiKeyFile) and \(variable: .issuerId) (docs/app-store-api.md).")
            }
            let summary = await NotificationBackfill(clients: clients, environments: [.production, .sandbox].filter(configuration.environments.contains), ingestor: notifications).run(days: days)
            for problem in summary.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            try await store.close()
            print(summary.description)
            if summary.refused + summary.failed > 0 { throw ExitCode(1) }
        }
    }
}
