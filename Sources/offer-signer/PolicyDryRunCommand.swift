import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning

extension PolicyCommand {
    /// `offer-signer policy dry-run CANDIDATE.yaml [--days N]`: replays the decision log under a candidate policy,
    /// offline against the configured store (docs/policy.md "Dry-run").
    struct DryRun: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dry-run",
            abstract:
                """
                Replays the decisions logged in the last days under a candidate policy and prints, as JSON, what would change \
                (\(variable: .databaseUrl)). Exit status 1 if the candidate is invalid or needs facts the log did not keep.
                """
        )

        @Argument(help: "The candidate policy file (YAML or JSON).")
        var file: String

        @Option(help: "How many days of decisions to replay, 1 to \(PolicyDryRun.maximumDays).")
        var days: Int = 30

        func validate() throws {
            guard (1...PolicyDryRun.maximumDays).contains(days) else {
                throw ValidationError("--days must be 1 to \(PolicyDryRun.maximumDays).")
            }
        }

        func run() async throws {
            let candidate: OfferPolicy
            do {
                candidate = try OfferPolicy(contentsOf: file)
            } catch {
                // As `policy check` refuses it.
                FileHandle.standardError.write(Data("\(error.message)\n".utf8))
                throw ExitCode(1)
            }
            let (_, useCases) = try await openUseCases(readOnly: true)
            guard useCases.policy.canDryRun else {
                throw ValidationError("A dry-run replays the store's decision log: set \(variable: .databaseUrl).")
            }
            let report: DryRunReport
            do {
                // The policy in force, whose experiments a candidate may keep.
                try await useCases.policy.adoptStoredPolicy()
                report = try await useCases.policy.dryRun(candidate, days: days, by: nil, logger: Logger(label: "offer-signer"))
            } catch let error as OfferServiceError {
                try? await useCases.closeStore()
                FileHandle.standardError.write(Data("\(error.message)\n".utf8))
                throw ExitCode(1)
            }
            try await useCases.closeStore()
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .millisecondsSince1970
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        }
    }
}
