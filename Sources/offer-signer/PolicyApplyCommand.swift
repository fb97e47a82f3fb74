import ArgumentParser
import Foundation
import NIOHTTP1
import OfferEligibility
import OfferSignerServer

extension PolicyCommand {
    /// `offer-signer policy apply FILE`: applies a policy to every replica sharing the store, through a running
    /// service's admin API (`PUT /admin/policy`; docs/policy.md "Applying a policy").
    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Applies a policy file to every replica sharing the store (PUT /admin/policy): checked first as `policy check` does, then in \
                force everywhere within a NOTIFY. Exit status 1 if it is refused.
                """
        )

        @Argument(help: "The policy file (YAML or JSON).")
        var file: String

        @OptionGroup var admin: AdminOptions

        func run() async throws {
            let text = try readInput(file)
            do {
                // Refused here as `policy check` refuses it, before the service is asked.
                _ = try OfferPolicy(text: String(decoding: text, as: UTF8.self))
            } catch {
                FileHandle.standardError.write(Data("\(file): \(error.message)\n".utf8))
                throw ExitCode(1)
            }
            print(AdminOptions.pretty(try await admin.answer(.PUT, "/admin/policy", body: text, contentType: "application/yaml")))
        }
    }

    /// `offer-signer policy show`: the policy a running replica runs (`GET /admin/policy`).
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Shows the version and revision of the policy a running service runs (GET /admin/policy)."
        )
        @OptionGroup var admin: AdminOptions
        func run() async throws { try await admin.call(.GET, "/admin/policy") }
    }
}
