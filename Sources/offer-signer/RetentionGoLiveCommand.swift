import AppStoreNotifications
import AppStoreServerAPI
import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferErrors
import OfferModel
import OfferSignerServer
import OfferSigning

extension RetentionCommand {
    /// `offer-signer retention go-live`: the Sandbox URL, Apple's performance test, and Production's URL on PASS.
    struct GoLive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "go-live",
            abstract:
                """
                Configures the Sandbox real-time URL, runs Apple's performance test and polls it to its result, prints the percentiles, and on \
                PASS only configures the Production real-time URL. Needs \(variable: .appStoreApiKeyId) and the variables of \
                docs/app-store-api.md.
                """,
            discussion:
                """
                Exit status 0 when live in Production, 1 when the test failed (nothing changed in Production), 2 when a step could not be done \
                (the message says which and why).
                """
        )

        @Option(name: .customLong("url"), help: "The Production URL of POST /v1/retention/appstore (https://, at most 256 characters).")
        var productionURL: String

        @Option(name: .customLong("sandbox-url"), help: "The Sandbox URL (Apple recommends a separate one); default: --url.")
        var sandboxURL: String?

        @Option(
            name: .customLong("transaction"),
            help: "The original transaction identifier of an active auto-renewable subscription bought in Sandbox."
        )
        var originalTransactionId: String

        @Option(name: .customLong("request-id"), help: "Poll this performance test (already started) instead of starting one.")
        var requestId: String?

        @Option(name: .customLong("bundle-id"), help: "The app (default: the only one).")
        var bundleIdentifier: String?

        @Option(
            name: .customLong("poll-seconds"),
            help: "Seconds between two polls of the result (at least 10: Sandbox allows one request every 10 s)."
        )
        var pollSeconds: Int = 15

        @Option(name: .customLong("timeout-minutes"), help: "How long to poll at most.")
        var timeoutMinutes: Int = 60

        func validate() throws {
            guard pollSeconds >= 10, pollSeconds <= 600 else { throw ValidationError("--poll-seconds must be 10 to 600.") }
            guard timeoutMinutes >= 1, timeoutMinutes <= 24 * 60 else { throw ValidationError("--timeout-minutes must be 1 to 1440.") }
        }

        func run() async throws {
            // The store keeps the test's result for the console (nothing else is written).
            let (_, useCases, made) = try await openRetentionUseCases(bundleIdentifier: bundleIdentifier)
            let bundle: String
            do {
                bundle = try made.get()
            } catch {
                try? await useCases.closeStore()
                throw error
            }
            let outcome: String
            do {
                outcome = try await useCases.retention.goLive(
                    bundle,
                    productionURL: productionURL,
                    sandboxURL: sandboxURL,
                    originalTransactionId: originalTransactionId,
                    resumeRequestId: requestId,
                    pollSeconds: pollSeconds,
                    timeoutMinutes: timeoutMinutes,
                    by: nil,
                    logger: Logger(label: "offer-signer")
                ) { line in print(line) }
                .outcome
            } catch let error as any CodedError {
                try? await useCases.closeStore()
                FileHandle.standardError.write(Data("\(error.message) [\(error.code.rawValue)]\n".utf8))
                throw ExitCode(2)
            }
            try? await useCases.closeStore()
            guard outcome == "live" else { throw ExitCode(1) }
        }
    }
}
