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
        guard case .signed(let signing, _) = step, let signed = try signing()?.signed else {
            Issue.record("expected a signature at once, got \(step)")
            return
        }
        #expect(signed.output.applicationUsername == "user-0001")
        #expect(signed.record?.nonce == signed.output.nonce)
    }

    /// Commits a signature made at once, as the event-loop path does.
    private static func commit(_ signed: ImmediateSignature<SignedLegacyOffer>, through signing: Signing) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            signing.commit(signed) { continuation.resume(with: $0.mapError { $0 as any Error }) }
        }
    }

    @Test("on a SQLite file the server holds, a cap is decided in the step itself, under the customer's lock until the record is durable")
    func capDecidedAtOnce() async throws {
        let fixture = try await StoreFixture(.sqlite, exclusive: true)
        let signing = fixture.service.signing
        guard case .signed(let first, _) = try signing.prepareSigning(request("once")), let signed = try first() else {
            Issue.record("expected the cap to be decided at once")
            return
        }
        // Its record is not durable yet: the customer's lock is held, so a second decision cannot be made at once
        // (and makes none: nothing logged), while another customer's can.
        guard case .signed(let second, _) = try signing.prepareSigning(request("once")) else {
            Issue.record("expected a step that may sign at once")
            return
        }
        #expect(try second() == nil)
        guard case .signed(let other, _) = try signing.prepareSigning(request("once", customer: "prepared-2")), let theirs = try other() else {
            Issue.record("expected another customer's decision at once")
            return
        }
        try await Self.commit(signed, through: signing)
        try await Self.commit(theirs, through: signing)
        // Durable, the lock given back: the next decision reads the signature and the cap of 1 refuses.
        guard case .signed(let third, _) = try signing.prepareSigning(request("once")) else {
            Issue.record("expected a step that may sign at once")
            return
        }
        #expect(Self.refusal { _ = try third() }?.code == "not_eligible")
        #expect(
            try await fixture.store.countIssuedSignatures(
                matching: IssuedSignatureQuery(bundleIdentifier: fixture.bundle, applicationUsername: "prepared-1", offerIdentifier: "once")
            ) == 1
        )
        await fixture.store.flushDecisionLog()
        let logged = try await fixture.store.policyDecisions(bundleIdentifiers: [fixture.bundle], since: 0, until: .max, after: nil, limit: 100)
        #expect(logged.count == 3, "two decisions for prepared-1 (granted, then refused), one for prepared-2; none for the step that waited")
        #expect(logged.filter(\.granted).count == 2)
        try await fixture.store.close()
    }

    @Test("a decision that spends a customer-service grant is not made at once: the pipeline spends it in a customer transaction")
    func grantGoesToThePipeline() async throws {
        let fixture = try await StoreFixture(.sqlite, exclusive: true)
        let key = CustomerKey(bundleIdentifier: fixture.bundle, applicationUsername: "prepared-1")
        try await fixture.store.updateCustomer(key) { facts in
            facts.grants.append(
                CustomerServiceGrant(
                    productIdentifier: TestPayloads.productIdentifier,
                    offerIdentifier: "sorry",
                    grantedBy: "carol",
                    expiresAt: Date().addingTimeInterval(86_400)
                )
            )
        }
        let signing = fixture.service.signing
        guard case .signed(let step, let otherwise) = try signing.prepareSigning(request("sorry")) else {
            Issue.record("expected a step that may sign at once")
            return
        }
        #expect(try step() == nil)
        guard case .legacy = try await signing.sign(otherwise) else {
            Issue.record("expected a legacy answer")
            return
        }
        let facts = try #require(try await fixture.store.customerFacts(for: key))
        #expect(facts.grants.first?.usedAt != nil)
        await fixture.store.flushDecisionLog()
        let logged = try await fixture.store.policyDecisions(bundleIdentifiers: [fixture.bundle], since: 0, until: .max, after: nil, limit: 100)
        #expect(logged.count == 1, "the grant's decision is logged once, by the pipeline")
        // The lock the step took was given back: the grant used, the next decision at once refuses.
        guard case .signed(let again, _) = try signing.prepareSigning(request("sorry")) else {
            Issue.record("expected a step that may sign at once")
            return
        }
        #expect(Self.refusal { _ = try again() }?.code == "not_eligible")
        try await fixture.store.close()
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
