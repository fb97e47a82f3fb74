import AppStoreNotifications
import AppStoreTestSupport
import Foundation

/// A test chain, a signer with it and a verifier trusting its root (Sandbox and Production, app Apple ID 1234567890).
struct Fixture {
    static let appAppleId: Int64 = 1_234_567_890

    let chain: TestCertificateChain
    let signer: TestJWSSigner
    let verifier: SignedDataVerifier

    init(_ options: TestCertificateChain.Options = .init(), environments: Set<AppStoreEnvironment> = [.sandbox, .production]) throws {
        self.chain = try TestCertificateChain(options)
        self.signer = TestJWSSigner(chain: chain)
        self.verifier = try SignedDataVerifier(
            bundleIdentifier: TestPayloads.bundleIdentifier,
            appAppleId: Self.appAppleId,
            environments: environments,
            trustedRoots: [chain.root]
        )
    }

    /// A verifier trusting `root` instead, otherwise the same.
    func verifier(trusting roots: [TestCertificateChain]) throws -> SignedDataVerifier {
        try SignedDataVerifier(
            bundleIdentifier: TestPayloads.bundleIdentifier,
            appAppleId: Self.appAppleId,
            environments: [.sandbox, .production],
            trustedRoots: roots.map(\.root)
        )
    }

    /// A signed SUBSCRIBED/INITIAL_BUY notification with nested transaction and renewal info.
    func subscribed(
        signer: TestJWSSigner? = nil,
        environment: AppStoreEnvironment = .sandbox,
        appAppleId: Int64? = nil,
        signedDate: Date = Date()
    ) async throws -> String {
        let transaction = TestPayloads.transaction(environment: environment, signedDate: signedDate)
        return try await (signer ?? self.signer).signNotification(
            .subscribed,
            subtype: .initialBuy,
            transaction: transaction,
            renewalInfo: TestPayloads.renewalInfo(for: transaction, signedDate: signedDate),
            environment: environment,
            appAppleId: appAppleId,
            status: .active,
            signedDate: signedDate
        )
    }
}
