import AppStoreTestSupport
import Foundation
import OfferApplication
import OfferModel
import OfferSigning
import OfferStore
import Testing

/// ``OfferService/prepareSigning(_:)``: `POST /v1/offers/sign`'s one step that does not suspend — a signed answer,
/// or the request validated once for the pipeline (``OfferService/sign(_:)``), which checks nothing again.
@Suite struct PrepareSigningTests {
    private func request(_ offer: String, customer: String = "prepared-1", format: OfferSignatureFormat? = nil) -> SignOfferRequest {
        var request = SignOfferRequest(productIdentifier: TestPayloads.productIdentifier, offerIdentifier: offer, applicationUsername: customer)
        request.format = format
        return request
    }

    @Test("without a policy rule that reads the store, a legacy request is signed in the step itself")
    func signedAtOnce() async throws {
        let test = try TestService()
        let step = try test.service.prepareSigning(
            SignOfferRequest(productIdentifier: "com.example.monthly", offerIdentifier: "winback_50", applicationUsername: "User-0001")
        )
        guard case .signed(let signing) = step else {
            Issue.record("expected a signature at once, got \(step)")
            return
        }
        let signed = try signing()
        #expect(signed.output.applicationUsername == "user-0001")
        #expect(signed.record?.nonce == signed.output.nonce)
    }

    @Test("a rule over the store, a signed transaction or a JWS is prepared for the pipeline, which runs the offer's rule")
    func preparedForThePipeline() async throws {
        let fixture = try await StoreFixture(.sqlite)
        let step = try fixture.service.prepareSigning(request("once"))
        guard case .pipeline(let prepared) = step else {
            Issue.record("expected a prepared request, got \(step)")
            return
        }
        guard case .legacy(let signed) = try await fixture.service.sign(prepared) else {
            Issue.record("expected a legacy answer")
            return
        }
        #expect(signed.applicationUsername == "prepared-1")
        // The same prepared request again meets the cap of 1 it resolved: the pipeline decided over the store.
        await #expect(throws: OfferServiceError.self) { try await fixture.service.sign(prepared) }
        for other in [request("everyone", format: .jws)] {
            guard case .pipeline = try fixture.service.prepareSigning(other) else {
                Issue.record("expected a prepared request for \(other)")
                continue
            }
        }
        var presenting = request("everyone")
        presenting.signedTransaction = "a.b.c"
        guard case .pipeline = try fixture.service.prepareSigning(presenting) else {
            Issue.record("expected a prepared request for a signed transaction")
            return
        }
        try await fixture.store.close()
    }

    @Test("a request the route would refuse is refused by the step, before anything is signed or recorded")
    func refusedBeforeAnyEffect() async throws {
        let fixture = try await StoreFixture(.sqlite)
        #expect(throws: OfferServiceError.self) { try fixture.service.prepareSigning(request("no-such-offer")) }
        #expect(throws: (any Error).self) { try fixture.service.prepareSigning(request("once", customer: "")) }
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
        try await fixture.store.close()
    }
}
