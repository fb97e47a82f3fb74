import ArgumentParser
import Foundation
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerServer
import OfferSigning

struct RetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Works with Retention Messaging (the App Store's real-time retention requests).",
        subcommands: [Explain.self, Sync.self, Status.self, GoLive.self]
    )

    struct Explain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Shows which retention entry the policy chooses for a request, and why, from the store (\(variable: .policy), \
                \(variable: .databaseUrl)). Signs nothing.
                """
        )

        @Argument(
            help:
                """
                A file with {\"signedPayload\": …}, a bare signedPayload (both verified), or a decoded request (DecodedRealtimeRequestBody \
                JSON); - reads standard input.
                """
        )
        var file: String

        func run() async throws {
            let text = String(decoding: try readInput(file), as: UTF8.self)
            let (configuration, useCases) = try await openUseCases(readOnly: true)
            guard configuration.policy != nil else {
                try? await useCases.closeStore()
                throw ValidationError("No policy (\(variable: .policy)): there are no retention entries to explain.")
            }
            let explanation: RetentionExplanation
            do {
                explanation = try await useCases.retentionAnswers.explainRetention(document: text)
            } catch let error as OfferServiceError {
                try? await useCases.closeStore()
                throw ValidationError(error.message)
            }
            try await useCases.closeStore()
            print("\(explanation.customer)\(explanation.customerKnown ? "" : " (not known to the store: judged on empty facts)")")
            for (position, considered) in explanation.choice.considered.enumerated() {
                let chosen = position == explanation.choice.index
                print("  \(chosen ? "chosen      " : "not chosen  ") \(position + 1). \(Self.describe(considered.entry))")
                for reason in considered.decision.reasons { print("      \(reason.rule): \(reason.message) [\(reason.code)]") }
            }
            if explanation.choice.index == nil {
                print("  no entry holds and there is no fallback: the App Store shows its default message")
            }
        }

        static func describe(_ entry: OfferPolicy.RetentionEntry) -> String {
            switch entry.answer {
            case .message: "message \(entry.messageIdentifier)\(entry.isFallback ? " (fallback)" : "")"
            case .alternateProduct(let product): "alternateProduct \(product), message \(entry.messageIdentifier)"
            case .promotionalOffer(let offer, let signature): "promotionalOffer \(offer) (\(signature.rawValue)), message \(entry.messageIdentifier)"
            }
        }
    }
}
