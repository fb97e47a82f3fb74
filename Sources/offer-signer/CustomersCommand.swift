import AppStoreNotifications
import AppStoreServerAPI
import ArgumentParser
import Foundation
import Logging
import OfferApplication
import OfferErrors
import OfferModel
import OfferSignerServer

struct CustomersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customers",
        abstract: "Works with what is known of customers.",
        subcommands: [Refresh.self]
    )

    struct Refresh: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                """
                Asks the App Store Server API about a transaction (statuses and history, every item verified) and prints the answer as JSON, \
                with the facts it folds into. Changes nothing: POST /admin/customers/{bundleIdentifier}/{applicationUsername}/refresh stores \
                them. Needs \(variable: .appStoreApiKeyId) and the variables of docs/app-store-api.md.
                """
        )

        @Argument(help: "Any transaction identifier of the customer (decimal digits).")
        var transactionId: String

        @Option(name: .customLong("bundle-id"), help: "The app (default: the only one).")
        var bundleIdentifier: String?

        func run() async throws {
            var logger = Logger(label: "offer-signer")
            logger.logLevel = .warning
            let configuration: ServiceConfiguration
            let clients: [String: AppStoreServerAPIClient]
            do {
                configuration = try ServiceConfiguration(environment: ConfigurationVariable.processEnvironment, requireKeys: false)
                clients = try makeAppStoreClients(
                    configuration: configuration,
                    verifiers: appStoreVerifiers(configuration: configuration, logger: logger),
                    logger: logger
                )
            } catch {
                throw ValidationError(error.message)
            }
            guard configuration.appStoreAPI != nil else {
                throw ValidationError(
                    "\(variable: .appStoreApiKeyId) is not set: the App Store Server API is not configured (docs/app-store-api.md)."
                )
            }
            let bundle = bundleIdentifier ?? (configuration.apps.count == 1 ? configuration.apps[0].bundleIdentifier : nil)
            guard let bundle else {
                throw ValidationError("Several apps are served: name one with --bundle-id.")
            }
            guard let client = clients[bundle] else {
                throw ValidationError(
                    """
                    No App Store Server API client for \(bundle): it is not served, or its App Store data cannot be verified (appAppleId for \
                    Production, \(variable: .environments), \(variable: .trustedRoots)).
                    """
                )
            }
            let fetched: FetchedSubscriptionFacts
            do {
                fetched = try await client.facts(forTransaction: transactionId, includeHistory: true)
            } catch {
                FileHandle.standardError.write(Data("\(error.message) [\(error.code.rawValue)]\n".utf8))
                throw ExitCode(error.code == .notFound ? 2 : 1)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            let output = RefreshOutput(fetched, bundleIdentifier: bundle)
            print(String(decoding: try encoder.encode(output), as: UTF8.self))
        }
    }
}

/// What `customers refresh` prints: the App Store's verified answer, decoded, and the subscription facts it folds into.
struct RefreshOutput: Encodable {
    struct Subscription: Encodable {
        var subscriptionGroupIdentifier: String?
        var status: SubscriptionStatus?
        var transaction: JWSTransactionDecodedPayload
        var renewalInfo: JWSRenewalInfoDecodedPayload?
    }

    struct History: Encodable {
        var isComplete: Bool
        var transactions: [JWSTransactionDecodedPayload]
    }

    var environment: String
    var subscriptions: [Subscription]
    var history: History?
    /// The facts a customer the store has never seen would get (what the server stores).
    var facts: [SubscriptionFacts]

    init(_ fetched: FetchedSubscriptionFacts, bundleIdentifier: String) {
        environment = fetched.environment.rawValue
        subscriptions = fetched.statuses.lastTransactions.map {
            Subscription(
                subscriptionGroupIdentifier: $0.subscriptionGroupIdentifier,
                status: $0.status,
                transaction: $0.transaction,
                renewalInfo: $0.renewalInfo
            )
        }
        history = fetched.history.map { History(isComplete: $0.isComplete, transactions: $0.transactions) }
        facts = fetched.facts(for: CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: "-")).subscriptions
    }
}
