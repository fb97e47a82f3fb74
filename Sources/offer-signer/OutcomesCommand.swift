import AppStoreNotifications
import AppStoreServerAPI
import ArgumentParser
import Foundation
import Logging
import NIOHTTP1
import OfferApplication
import OfferModel
import OfferSignerServer

struct OutcomesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "What the offers became: redeemed, attributed to a signature from this service, renewed, refunded, saved (docs/outcomes.md).",
        subcommands: [Report.self, Backfill.self]
    )

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Prints the outcome report of a running service (GET /admin/outcomes, or /admin/outcomes/daily with --daily): a table, or \
                --json, or --csv.
                """
        )

        @Option(help: "The window's start, ISO 8601 (2026-11-01 or 2026-11-01T00:00:00Z), inclusive (default: 30 days before --to).")
        var from: String?

        @Option(help: "The window's end, ISO 8601, exclusive (default: now).")
        var to: String?

        @Option(name: .customLong("bundle-id"), help: "One app (default: every app).")
        var bundleIdentifier: String?

        @Option(help: "One App Store environment: Production, Sandbox, … (default: every one).")
        var environment: String?

        @Flag(help: "One report per UTC day.")
        var daily = false

        @Flag(help: "Print the service's JSON answer.")
        var json = false

        @Flag(help: "Print CSV, one line per offer (per day with --daily).")
        var csv = false

        @OptionGroup var admin: AdminOptions

        func validate() throws {
            if json && csv { throw ValidationError("Choose one of --json and --csv.") }
        }

        func run() async throws {
            var components = URLComponents()
            components.path = daily ? "/admin/outcomes/daily" : "/admin/outcomes"
            let parameters = [("from", from), ("to", to), ("bundleId", bundleIdentifier), ("environment", environment)]
            components.queryItems = parameters.compactMap { name, value in value.map { URLQueryItem(name: name, value: $0) } }
            if components.queryItems?.isEmpty == true { components.queryItems = nil }
            // `+` is a space in a query: an ISO 8601 offset must travel encoded.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
            guard let path = components.string else { throw ValidationError("The options do not make a URL.") }
            let text = try await admin.answer(.GET, path)
            if json {
                print(AdminOptions.pretty(text))
                return
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            let reports: [OutcomeReport]
            do {
                if daily {
                    struct Daily: Decodable { var days: [OutcomeReport] }
                    reports = try decoder.decode(Daily.self, from: Data(text.utf8)).days
                } else {
                    reports = [try decoder.decode(OutcomeReport.self, from: Data(text.utf8))]
                }
            } catch {
                FileHandle.standardError.write(Data("offer-signer: the service's answer is not an outcome report; is it this version?\n".utf8))
                throw ExitCode(1)
            }
            if csv {
                print(reports.enumerated().map { index, report in report.csv(header: index == 0) }.filter { !$0.isEmpty }.joined(separator: "\r\n"))
            } else {
                print(reports.map { $0.table() }.joined(separator: "\n\n"))
            }
        }
    }

    struct Backfill: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Reads the App Store's notification history (Get Notification History) of the last days and records it as if it had just \
                arrived: customer facts, redemptions and what became of them. Needs the App Store Server API key \
                (\(variable: .appStoreApiKeyId), \(variable: .appStoreApiKeyFile)). Notifications already received change nothing. Exit status \
                1 if any notification was refused or could not be read.
                """
        )

        @Option(help: "How many days back, 1 to \(NotificationBackfill.maximumDays) (Apple keeps \(NotificationBackfill.maximumDays)).")
        var days: Int = 30

        @Option(name: .customLong("bundle-id"), help: "Only this app (default: every app with an App Store Server API client).")
        var bundleIdentifier: String?

        func validate() throws {
            guard (1...NotificationBackfill.maximumDays).contains(days) else {
                throw ValidationError(
                    "--days must be 1 to \(NotificationBackfill.maximumDays): Apple keeps \(NotificationBackfill.maximumDays) days of notifications."
                )
            }
        }

        func run() async throws {
            let (configuration, store, notifications) = try await openApplicationStore()
            guard let store, let notifications else {
                throw ValidationError(
                    """
                    A backfill needs a store (\(variable: .databaseUrl)) and an app that can verify App Store data (\(variable: .environments), \
                    appAppleId for Production).
                    """
                )
            }
            var logger = Logger(label: "offer-signer")
            logger.logLevel = .warning
            var clients: [String: AppStoreServerAPIClient]
            do {
                clients = try makeAppStoreClients(configuration: configuration, verifiers: notifications.verifiers, logger: logger)
            } catch {
                try await store.close()
                throw ValidationError(error.message)
            }
            if let bundleIdentifier {
                guard let client = clients[bundleIdentifier] else {
                    try await store.close()
                    throw ValidationError(
                        "No App Store Server API client for \(bundleIdentifier): is it an app of the policy, with appAppleId for Production?"
                    )
                }
                clients = [bundleIdentifier: client]
            }
            guard !clients.isEmpty else {
                try await store.close()
                throw ValidationError(
                    """
                    A backfill asks the App Store Server API: set \(variable: .appStoreApiKeyId), \(variable: .appStoreApiKeyFile) and \
                    \(variable: .issuerId) (docs/app-store-api.md).
                    """
                )
            }
            let summary = await NotificationBackfill(
                clients: clients,
                environments: [.production, .sandbox].filter(configuration.environments.contains),
                ingestor: notifications
            ).run(days: days)
            for problem in summary.problems { FileHandle.standardError.write(Data("\(problem)\n".utf8)) }
            try await store.close()
            print(summary.description)
            if summary.refused + summary.failed > 0 { throw ExitCode(1) }
        }
    }
}
