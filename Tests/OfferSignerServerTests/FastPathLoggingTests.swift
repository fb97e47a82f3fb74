import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import HTTPTypes
import Logging
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Testing

@testable import OfferApplication
@testable import OfferSignerServer

/// The event-loop signing path hands a request that must wait (a signed transaction to verify) to a task: what
/// other loggers write meanwhile carries the request's ID, as on the router.
@Suite struct FastPathLoggingTests {
    @Test("a signed transaction refused on the fast path is logged with the request's ID")
    func refusalsCarryTheRequestID() async throws {
        let lines = LogLines()
        let store = try await StoreBackend.sqlite.open()
        let bundle = "com.example.fast-path-log"
        let chain = try TestCertificateChain()
        let verifier = try SignedDataVerifier(bundleIdentifier: bundle, environments: [.sandbox], trustedRoots: [chain.root])
        let ingestor = NotificationIngestor(verifiers: [bundle: verifier], store: store, logger: lines.logger("ingestor"))
        let service = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: bundle)],
            keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
            store: store,
            notifications: ingestor
        )
        let signing = EventLoopSigning(signing: Signing(pipeline: service), authenticator: nil, limits: RateLimits(.none), serverName: nil)
        let request = SignOfferRequest(
            bundleIdentifier: bundle,
            productIdentifier: "com.example.monthly",
            offerIdentifier: "winback_50",
            applicationUsername: "user-1",
            signedTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.a/b"
        )
        let answering = EventLoopSigning.Answering(requestID: "fast-path-request-1", base: Logger(label: "connection"), identity: .open)
        guard case .pipeline(let prepared) = try service.signing.prepareSigning(request) else {
            Issue.record("a request with a signed transaction was not prepared for the pipeline")
            return
        }
        let result = await withCheckedContinuation { continuation in
            signing.answer(prepared, answering) { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = result else {
            Issue.record("a bogus signed transaction was accepted")
            return
        }
        #expect(error.status == .badRequest)
        let refusal = try lines.objects().first { $0["message"] == "refused App Store signed data" }
        #expect(refusal?["requestId"] == "fast-path-request-1", "\(lines.all)")
        try await store.close()
    }
}
