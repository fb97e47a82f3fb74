import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation

/// A test chain that signs the fake's answers, the In-App Purchase key the fake trusts, and clients configured
/// for a fake on a port.
struct Fixture {
    let chain: TestCertificateChain
    let signer: TestJWSSigner
    let appKey: P256.Signing.PrivateKey

    init() throws {
        self.chain = try TestCertificateChain()
        self.signer = TestJWSSigner(chain: chain)
        self.appKey = P256.Signing.PrivateKey()
    }

    /// The verifier of the app's notifications, trusting the test root.
    func verifier(environments: Set<AppStoreEnvironment> = [.production, .sandbox]) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            bundleIdentifier: TestPayloads.bundleIdentifier,
            appAppleId: FakeAppStore.appAppleId,
            environments: environments,
            trustedRoots: [chain.root]
        )
    }

    /// A configuration for the fake on `port`: short backoffs so that tests run quickly, and a 15 s budget that a
    /// test of the budget sets lower (with 3 s, calls timed out on two cores loaded by the whole suite).
    func configuration(
        port: Int,
        environments: [AppStoreEnvironment] = [.production],
        timeout: Duration = .seconds(15),
        cacheTimeToLive: Duration = .seconds(60),
        key: P256.Signing.PrivateKey? = nil
    ) -> AppStoreServerAPIConfiguration {
        var configuration = AppStoreServerAPIConfiguration(
            keyIdentifier: FakeAppStore.keyIdentifier,
            privateKeyPEM: (key ?? appKey).pemRepresentation,
            issuerId: FakeAppStore.issuerId,
            bundleIdentifier: TestPayloads.bundleIdentifier,
            environments: environments
        )
        configuration.baseURLs = .init(production: "http://localhost:\(port)/production", sandbox: "http://localhost:\(port)/sandbox/")
        configuration.timeout = timeout
        configuration.cacheTimeToLive = cacheTimeToLive
        configuration.retry.initialBackoff = .milliseconds(10)
        configuration.retry.maximumBackoff = .milliseconds(50)
        return configuration
    }

    func client(_ configuration: AppStoreServerAPIConfiguration) throws -> AppStoreServerAPIClient {
        try AppStoreServerAPIClient(configuration: configuration, verifier: verifier())
    }

    func fake(_ respond: @escaping @Sendable (FakeRequest) async throws -> FakeResponse) -> FakeAppStore {
        FakeAppStore(appKey: appKey, respond: respond)
    }

    /// A transaction in `environment`.
    static func transaction(
        _ environment: AppStoreEnvironment = .production,
        originalTransactionId: String = "1000000000000001",
        transactionId: String? = nil,
        purchaseDate: Date = Date(),
        expiresDate: Date? = nil
    ) -> JWSTransactionDecodedPayload {
        TestPayloads.transaction(
            originalTransactionId: originalTransactionId,
            transactionId: transactionId,
            purchaseDate: purchaseDate,
            expiresDate: expiresDate,
            environment: environment
        )
    }

    /// A Get All Subscription Statuses answer with one subscription, signed with `signer` (default: the trusted chain).
    func statuses(
        _ environment: AppStoreEnvironment = .production,
        status: SubscriptionStatus = .active,
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil,
        signer: TestJWSSigner? = nil,
        renewalSigner: TestJWSSigner? = nil
    ) async throws -> FakeResponse {
        let transaction = transaction ?? Self.transaction(environment)
        let renewalInfo = renewalInfo ?? TestPayloads.renewalInfo(for: transaction)
        let item = StatusBody.Item(
            status: status.rawValue,
            originalTransactionId: transaction.originalTransactionId ?? "",
            signedTransactionInfo: try await (signer ?? self.signer).sign(transaction),
            signedRenewalInfo: try await (renewalSigner ?? signer ?? self.signer).sign(renewalInfo)
        )
        return .json(
            StatusBody(
                environment: environment.rawValue,
                bundleIdentifier: TestPayloads.bundleIdentifier,
                appAppleId: FakeAppStore.appAppleId,
                data: [.init(subscriptionGroupIdentifier: transaction.subscriptionGroupIdentifier ?? "", lastTransactions: [item])]
            )
        )
    }

    /// One page of Get Transaction History.
    func historyPage(
        _ environment: AppStoreEnvironment = .production,
        transactions: [JWSTransactionDecodedPayload],
        revision: String,
        hasMore: Bool
    ) async throws -> FakeResponse {
        var signed: [String] = []
        for transaction in transactions { signed.append(try await signer.sign(transaction)) }
        return .json(
            HistoryBody(
                revision: revision,
                hasMore: hasMore,
                bundleIdentifier: TestPayloads.bundleIdentifier,
                appAppleId: FakeAppStore.appAppleId,
                environment: environment.rawValue,
                signedTransactions: signed
            )
        )
    }
}

/// A P-256 key for token tests.
struct P256Key {
    let key: P256.Signing.PrivateKey

    static func make() -> P256Key { P256Key(key: P256.Signing.PrivateKey()) }

    var pem: String { key.pemRepresentation }

    func verify(signature: Data, signed: String) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.publicKey.isValidSignature(signature, for: Data(signed.utf8))
    }
}
