import ArgumentParser
import Configuration
import Foundation
import OfferApplication
import OfferEligibility
import OfferSignerServer

struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Works with the offer catalogue and eligibility policy file.",
        subcommands: [Check.self, DryRun.self, Apply.self, Show.self]
    )

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validates a policy file (YAML or JSON) as the service would at start-up. Exit status 0 valid, 1 invalid."
        )

        @Argument(help: "The policy file (default: \(variable: .policy)).")
        var file: String?

        func run() throws {
            guard let path = file ?? ConfigurationVariable.reader(ConfigurationVariable.processEnvironment).string(.policy) else {
                throw ValidationError("Pass the policy file, or set \(variable: .policy).")
            }
            do {
                let policy = try OfferPolicy(contentsOf: path)
                for app in policy.apps {
                    print("\(app.bundleIdentifier)")
                    for product in app.products {
                        let introductory =
                            product.introductoryOffer.map { " (introductory-offer policy: \($0.rules.map(\.name).joined(separator: ", ")))" } ?? ""
                        print("  \(product.productIdentifier)\(introductory)")
                        for offer in product.offers {
                            let rules = offer.rule.rules.map(\.name)
                            print("    \(offer.offerIdentifier): \(rules.isEmpty ? "no rules (everyone)" : rules.joined(separator: ", "))")
                        }
                        for (position, entry) in product.retention.enumerated() {
                            let rules = entry.rules.rules.map(\.name)
                            let when = rules.isEmpty ? "" : " when \(rules.joined(separator: ", "))"
                            print("    retention \(position + 1): \(RetentionCommand.Explain.describe(entry))\(when)")
                        }
                    }
                    let catalogue = app.retentionCatalogue
                    if !catalogue.isEmpty {
                        print(
                            """
                              retention catalogue: \(catalogue.messages.count) messages, \(catalogue.images.count) images, \
                            \(catalogue.defaults.count) defaults
                            """
                        )
                        for message in catalogue.messages { print("    message \(message.name): \(message.identifier)") }
                        for entry in catalogue.defaults { print("    default \(entry.productIdentifier) \(entry.locale): \(entry.messageName)") }
                    }
                }
                // Apple's limits, before anything is sent (retention sync refuses the same problems).
                let problems = RetentionCatalogueCheck.problems(in: policy)
                guard problems.isEmpty else {
                    for problem in problems { FileHandle.standardError.write(Data("\(path): \(problem)\n".utf8)) }
                    throw ExitCode(1)
                }
                print("\(path): valid")
            } catch let error as PolicyError {
                FileHandle.standardError.write(Data("\(error.message)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
