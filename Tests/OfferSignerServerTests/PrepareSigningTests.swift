import AppStoreTestSupport
import Foundation
import OfferApplication
import OfferEligibility
import OfferErrors
import OfferModel
import OfferSigning
import OfferStore
import Testing

/// ``Signing/prepareSigning(_:)``: `POST /v1/offers/sign`'s one step that does not suspend — a signed answer,
/// or the request validated once for the pipeline (``Signing/sign(_:)``), which checks nothing again.
@Suite struct PrepareSigningTests {
    private func request(_ offer: String, customer: String = "prepared-1", format: OfferSignatureFormat? = nil) -> SignOfferRequest {
        var request = SignOfferRequest(productIdentifier: TestPayloads.productIdentifier, offerIdentifier: offer, applicationUsername: customer)
        request.format = format
        return request
    }

    /// A JWS request of ``request(_:customer:format:)`` changed by `change`.
    private static func jws(_ offer: String = "everyone", _ change: (inout SignOfferRequest) -> Void = { _ in }) -> SignOfferRequest {
        var request = SignOfferRequest(productIdentifier: TestPayloads.productIdentifier, offerIdentifier: offer, applicationUsername: "prepared-1")
        request.format = .jws
        change(&request)
        return request
    }

    /// The code and field of what `body` throws (`nil`: it did not throw).
    private static func refusal(_ body: () throws -> Void) -> (code: String, field: String?)? {
        do {
            try body()
            return nil
        } catch let error as OfferServiceError {
            return (error.code.rawValue, error.field)
        } catch let error as OfferSigningError {
            return (error.code.rawValue, error.field)
        } catch {
            return ("\(error)", nil)
        }
    }

    @Test("without a policy rule that reads the store, a legacy request is signed in the step itself")
    func signedAtOnce() async throws {
        let test = try TestService()
        let step = try test.service.signing.prepareSigning(
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
        let step = try fixture.service.signing.prepareSigning(request("once"))
        guard case .pipeline(let prepared) = step else {
            Issue.record("expected a prepared request, got \(step)")
            return
        }
        guard case .legacy(let signed) = try await fixture.service.signing.sign(prepared) else {
            Issue.record("expected a legacy answer")
            return
        }
        #expect(signed.applicationUsername == "prepared-1")
        // The same prepared request again meets the cap of 1 it resolved: the pipeline decided over the store.
        await #expect(throws: OfferServiceError.self) { try await fixture.service.signing.sign(prepared) }
        for other in [request("everyone", format: .jws)] {
            guard case .pipeline = try fixture.service.signing.prepareSigning(other) else {
                Issue.record("expected a prepared request for \(other)")
                continue
            }
        }
        var presenting = request("everyone")
        presenting.signedTransaction = "a.b.c"
        guard case .pipeline = try fixture.service.signing.prepareSigning(presenting) else {
            Issue.record("expected a prepared request for a signed transaction")
            return
        }
        try await fixture.store.close()
    }

    @Test("a request the route would refuse is refused by the step, before anything is signed or recorded")
    func refusedBeforeAnyEffect() async throws {
        let fixture = try await StoreFixture(.sqlite)
        #expect(throws: OfferServiceError.self) { try fixture.service.signing.prepareSigning(request("no-such-offer")) }
        #expect(throws: (any Error).self) { try fixture.service.signing.prepareSigning(request("once", customer: "")) }
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
        try await fixture.store.close()
    }

    @Test("a JWS request is prepared with its app, offer and rule resolved: the pipeline signs it without resolving them again")
    func jwsPreparedOnce() async throws {
        let fixture = try await StoreFixture(.sqlite)
        let step = try fixture.service.signing.prepareSigning(request("once", format: .jws))
        guard case .pipeline(let prepared) = step else {
            Issue.record("expected a prepared request, got \(step)")
            return
        }
        // A policy without the offer now in force: the prepared request keeps the rule it resolved.
        let without = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(fixture.bundle)
                    issuerIdentifier: 57246542-96fe-1a63-e053-0824d011072a
                    products:
                      - productIdentifier: \(TestPayloads.productIdentifier)
                        offers:
                          - offerIdentifier: everyone
                """
        )
        #expect(fixture.service.policyHolder.replace(with: PolicyInForce(policy: without, revision: 1)))
        #expect(Self.refusal { _ = try fixture.service.signing.prepareSigning(request("once", format: .jws)) }?.code == "unknown_offer")
        guard case .jws(let signed) = try await fixture.service.signing.sign(prepared) else {
            Issue.record("expected a JWS answer")
            return
        }
        #expect(signed.offerIdentifier == "once")
        #expect(signed.bundleIdentifier == fixture.bundle)
        // Its rule, the cap of 1 resolved at preparation, decides the same request again over the store.
        await #expect(throws: OfferServiceError.self) { try await fixture.service.signing.sign(prepared) }
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 1)
        try await fixture.store.close()
    }

    @Test(
        "a JWS request the route would refuse is refused by the step, with the error signing it gives, before anything else",
        arguments: [
            (PrepareSigningTests.jws("no-such-offer") { $0.signedTransaction = "a.b.c" }, "unknown_offer", nil),
            (PrepareSigningTests.jws { $0.productIdentifier = "" }, "invalid_field", "productIdentifier"),
            (PrepareSigningTests.jws { $0.offerIdentifier = String(repeating: "o", count: 300) }, "invalid_field", "offerIdentifier"),
            (PrepareSigningTests.jws { $0.transactionId = "12ab" }, "invalid_field", "transactionId"),
            (PrepareSigningTests.jws { $0.applicationUsername = "otid:2000000000000001" }, "invalid_field", "applicationUsername"),
            (PrepareSigningTests.jws { $0.bundleIdentifier = "com.example.other" }, "unknown_app", nil),
        ] as [(SignOfferRequest, String, String?)]
    )
    func jwsRefusedOnce(request: SignOfferRequest, code: String, field: String?) async throws {
        let fixture = try await StoreFixture(.sqlite)
        let prepared = Self.refusal { _ = try fixture.service.signing.prepareSigning(request) }
        #expect(prepared?.code == code)
        #expect(prepared?.field == field)
        // The whole signing refuses with the very same error: the step is the only place it is checked.
        var signed: (code: String, field: String?)?
        do {
            _ = try await fixture.service.signing.signJWS(request)
        } catch {
            signed = Self.refusal { throw error }
        }
        #expect(signed?.code == prepared?.code)
        #expect(signed?.field == prepared?.field)
        // Nothing signed or recorded.
        #expect(try await fixture.store.countIssuedSignatures(matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle)) == 0)
        try await fixture.store.close()
    }

    @Test("a JWS for an app without an issuer ID is refused by the step: issuer_not_configured")
    func jwsWithoutIssuer() throws {
        let test = try TestService()
        let refused = Self.refusal { _ = try test.service.signing.prepareSigning(Self.jws { $0.offerIdentifier = "winback_50" }) }
        #expect(refused?.code == "issuer_not_configured")
    }
}
