import ArgumentParser
import Foundation
import NIOHTTP1
import OfferApplication
import OfferStore

struct OutcomesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outcomes",
        abstract: "What the offers became: redeemed, attributed to a signature from this service, renewed, refunded, saved (docs/outcomes.md).",
        subcommands: [Report.self]
    )

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Prints the outcome report of a running service (GET /admin/outcomes, or /admin/outcomes/daily with --daily): a table, or --json, or --csv.")

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
}
