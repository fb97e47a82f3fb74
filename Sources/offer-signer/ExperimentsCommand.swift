import ArgumentParser
import Foundation
import NIOHTTP1
import OfferApplication

struct ExperimentsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "experiments",
        abstract: "The policy's offer experiments and their results, from a running service (docs/experiments.md).",
        subcommands: [List.self, Report.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Lists the experiments of the policy in force (GET /admin/experiments).")

        @OptionGroup var admin: AdminOptions

        func run() async throws {
            print(AdminOptions.pretty(try await admin.answer(.GET, "/admin/experiments")))
        }
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                An experiment's results (GET /admin/experiments/ID): per variant exposed, mature, redeemed, renewed, converted, retained, \
                realized revenue, the rate with its always-valid interval, the comparisons with their verdicts, and the sample-ratio check.
                """
        )

        @Argument(help: "The experiment's id.")
        var id: String

        @Flag(help: "Print the service's JSON answer.")
        var json = false

        @OptionGroup var admin: AdminOptions

        func validate() throws {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-".utf8)
            guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy(allowed.contains) else {
                throw ValidationError("An experiment's id is 1 to 64 letters, digits, '.', '_' or '-'.")
            }
        }

        func run() async throws {
            let text = try await admin.answer(.GET, "/admin/experiments/\(id)")
            if json {
                print(AdminOptions.pretty(text))
                return
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            guard let report = try? decoder.decode(ExperimentReport.self, from: Data(text.utf8)) else {
                FileHandle.standardError.write(Data("offer-signer: the service's answer is not an experiment report; is it this version?\n".utf8))
                throw ExitCode(1)
            }
            print(report.table())
        }
    }
}

extension ExperimentReport {
    /// The report as a table for a terminal.
    func table() -> String {
        func percent(_ value: Double) -> String { String(format: "%.1f%%", value * 100) }
        func interval(_ interval: Interval?) -> String {
            guard let interval else { return "-" }
            return "\(percent(interval.estimate)) [\(percent(interval.lower)), \(percent(interval.upper))]"
        }
        var lines = [
            "experiment \(id) — \(bundleIdentifier) / \(productIdentifier), \(channel), metric \(metric), \(running ? "running" : "not running")",
            "planned \(plannedCustomers) customers per variant; every metric within \(windowDays) days of each exposure, over the mature customers",
            """
            rates at \(percent(confidenceLevel)); comparisons at \(percent(comparisonConfidenceLevel)) each (\(correction) over \
            \(comparisons.count))
            """,
            "",
            [
                "variant", "gives", "weight", "exposed", "mature", "maturing", "redeemed", "renewed", "converted", "retained", "rate [interval]",
                "revenue / mature",
            ].joined(separator: "\t"),
        ]
        for variant in variants {
            let revenue = variant.revenue.map { "\($0.currency) \(String(format: "%.2f", $0.perExposedCustomer / 1000))" }.joined(separator: ", ")
            lines.append(
                [
                    variant.name, variant.answer ?? "(holdout)", "\(variant.weight)", "\(variant.exposed)", "\(variant.mature)",
                    "\(variant.maturing)",
                    "\(variant.redeemed)", "\(variant.renewedAfterOffer)", "\(variant.converted)", "\(variant.retained)", interval(variant.rate),
                    revenue.isEmpty ? "-" : revenue,
                ].joined(separator: "\t")
            )
        }
        lines.append("")
        for comparison in comparisons { lines.append(comparison.summary) }
        if let sampleRatio {
            lines.append(
                """
                sample ratio: chi-square \(String(format: "%.2f", sampleRatio.chiSquare)), p = \
                \(String(format: "%.4g", sampleRatio.pValue))\(sampleRatio.mismatch ? " — MISMATCH" : "")
                """
            )
        }
        lines.append(note)
        return lines.joined(separator: "\n")
    }
}
