import AppStoreTestSupport
import Foundation
import Testing
import X509

@testable import AppStoreNotifications

@Suite("SignedDataVerifier refuses what Apple's would")
struct SignedDataVerifierRefusalTests {
    /// The code `operation` is refused with (`nil` if it is not refused or fails with another error).
    private func refusal(_ operation: () async throws -> Void) async -> SignedDataVerificationError.Code? {
        do {
            try await operation()
            return nil
        } catch let error as SignedDataVerificationError {
            return error.code
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    private func notificationRefusal(_ verifier: SignedDataVerifier, _ jws: String) async -> SignedDataVerificationError.Code? {
        await refusal { _ = try await verifier.verifyAndDecodeNotification(jws) }
    }

    @Test("a chain that does not end at a trusted root")
    func untrustedRoot() async throws {
        let fixture = try Fixture()
        let stranger = TestJWSSigner(chain: try TestCertificateChain())
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed(signer: stranger)) == .untrustedRoot)
    }

    @Test("a look-alike root with the trusted root's name, sent in x5c")
    func lookAlikeRoot() async throws {
        let fixture = try Fixture()
        var options = TestCertificateChain.Options()
        options.rootCommonName = "OfferSigner Test Root CA"
        let impostor = TestJWSSigner(chain: try TestCertificateChain(options))
        #expect(impostor.chain.root.subject == fixture.chain.root.subject)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed(signer: impostor)) == .untrustedRoot)
    }

    @Test("a good leaf and intermediate whose x5c[2] is not the trusted root")
    func thirdCertificateIsNotTheRoot() async throws {
        let fixture = try Fixture()
        let other = try TestCertificateChain()
        // Trust both roots: x5c[2] is trusted, but it is not the root the chain ends at.
        let verifier = try fixture.verifier(trusting: [fixture.chain, other])
        var signer = fixture.signer
        signer.x5c = [fixture.chain.leaf, fixture.chain.intermediate, other.root]
        #expect(await notificationRefusal(verifier, try await fixture.subscribed(signer: signer)) == .untrustedRoot)
        // The same x5c with the right root passes.
        _ = try await verifier.verifyAndDecodeNotification(try await fixture.subscribed())
    }

    @Test("a leaf without Apple's marker extension")
    func leafWithoutMarker() async throws {
        var options = TestCertificateChain.Options()
        options.leafMarker = false
        let fixture = try Fixture(options)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed()) == .missingMarkerExtension)
    }

    @Test("an intermediate without Apple's marker extension")
    func intermediateWithoutMarker() async throws {
        var options = TestCertificateChain.Options()
        options.intermediateMarker = false
        let fixture = try Fixture(options)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed()) == .missingMarkerExtension)
    }

    @Test("a leaf that expired before signedDate")
    func expiredLeaf() async throws {
        let now = Date()
        var options = TestCertificateChain.Options(now: now)
        options.leafValidity = now.addingTimeInterval(-2 * 86_400)...now.addingTimeInterval(-86_400)
        let fixture = try Fixture(options)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed(signedDate: now)) == .certificateExpired)
    }

    @Test("an intermediate that expired before signedDate")
    func expiredIntermediate() async throws {
        let now = Date()
        var options = TestCertificateChain.Options(now: now)
        options.intermediateValidity = now.addingTimeInterval(-400 * 86_400)...now.addingTimeInterval(-86_400)
        let fixture = try Fixture(options)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed(signedDate: now)) == .certificateExpired)
    }

    @Test("a leaf not yet valid at signedDate, even though it is valid now")
    func notYetValidAtSignedDate() async throws {
        let now = Date()
        var options = TestCertificateChain.Options(now: now)
        options.leafValidity = now.addingTimeInterval(-86_400)...now.addingTimeInterval(365 * 86_400)
        let fixture = try Fixture(options)
        let signedDate = now.addingTimeInterval(-10 * 86_400)
        #expect(await notificationRefusal(fixture.verifier, try await fixture.subscribed(signedDate: signedDate)) == .certificateNotYetValid)
    }

    @Test("a chain remembered after it verified still refuses a signedDate outside its certificates' validity")
    func rememberedChainStillChecksDates() async throws {
        let now = Date()
        var options = TestCertificateChain.Options(now: now)
        options.leafValidity = now.addingTimeInterval(-86_400)...now.addingTimeInterval(86_400)
        let fixture = try Fixture(options)
        // Verified once (and remembered), then again from memory.
        _ = try await fixture.verifier.verifyAndDecodeNotificationContents(try await fixture.subscribed(signedDate: now))
        _ = try await fixture.verifier.verifyAndDecodeNotificationContents(try await fixture.subscribed(signedDate: now.addingTimeInterval(60)))
        // The same certificates, signed at dates outside the leaf's validity: refused as without the memory.
        #expect(
            await notificationRefusal(fixture.verifier, try await fixture.subscribed(signedDate: now.addingTimeInterval(2 * 86_400)))
                == .certificateExpired
        )
        #expect(
            await notificationRefusal(fixture.verifier, try await fixture.subscribed(signedDate: now.addingTimeInterval(-2 * 86_400)))
                == .certificateNotYetValid
        )
        // And a forged signature over the remembered chain is still a forged signature.
        let genuine = try await fixture.subscribed(signedDate: now).split(separator: ".")
        let other = try await fixture.subscribed(signedDate: now.addingTimeInterval(5)).split(separator: ".")
        #expect(await notificationRefusal(fixture.verifier, "\(genuine[0]).\(other[1]).\(genuine[2])") == .invalidSignature)
    }

    @Test("a wrong bundle ID, in a notification and in a transaction")
    func wrongBundleId() async throws {
        let fixture = try Fixture()
        let notification = try await fixture.signer.signNotification(.subscribed, bundleIdentifier: "com.other.app")
        #expect(await notificationRefusal(fixture.verifier, notification) == .wrongBundleId)
        let transaction = try await fixture.signer.sign(TestPayloads.transaction(bundleIdentifier: "com.other.app"))
        #expect(await refusal { _ = try await fixture.verifier.verifyAndDecodeTransaction(transaction) } == .wrongBundleId)
    }

    @Test("a nested transaction for another app inside a good notification")
    func wrongNestedBundleId() async throws {
        let fixture = try Fixture()
        let transaction = TestPayloads.transaction(bundleIdentifier: "com.other.app")
        let signed = try await fixture.signer.signNotification(.didRenew, transaction: transaction)
        _ = try await fixture.verifier.verifyAndDecodeNotification(signed)
        #expect(await refusal { _ = try await fixture.verifier.verifyAndDecodeNotificationContents(signed) } == .wrongBundleId)
    }

    @Test("an environment that is not accepted")
    func wrongEnvironment() async throws {
        let sandboxOnly = try Fixture(environments: [.sandbox])
        let production = try await sandboxOnly.subscribed(environment: .production, appAppleId: Fixture.appAppleId)
        #expect(await notificationRefusal(sandboxOnly.verifier, production) == .wrongEnvironment)

        let productionOnly = try SignedDataVerifier(
            bundleIdentifier: TestPayloads.bundleIdentifier,
            appAppleId: Fixture.appAppleId,
            trustedRoots: [sandboxOnly.chain.root]
        )
        #expect(await notificationRefusal(productionOnly, try await sandboxOnly.subscribed()) == .wrongEnvironment)

        let renewalInfo = try await sandboxOnly.signer.sign(
            TestPayloads.renewalInfo(for: TestPayloads.transaction(environment: .production))
        )
        #expect(await refusal { _ = try await sandboxOnly.verifier.verifyAndDecodeRenewalInfo(renewalInfo) } == .wrongEnvironment)

        let xcode = try await sandboxOnly.signer.sign(TestPayloads.transaction(environment: .xcode))
        #expect(await refusal { _ = try await sandboxOnly.verifier.verifyAndDecodeTransaction(xcode) } == .wrongEnvironment)
    }

    @Test("a wrong or missing appAppleId in Production")
    func wrongAppAppleId() async throws {
        let fixture = try Fixture()
        let wrong = try await fixture.subscribed(environment: .production, appAppleId: 42)
        #expect(await notificationRefusal(fixture.verifier, wrong) == .wrongAppAppleId)
        let missing = try await fixture.subscribed(environment: .production, appAppleId: nil)
        #expect(await notificationRefusal(fixture.verifier, missing) == .wrongAppAppleId)
        // Sandbox notifications carry no appAppleId and need none.
        _ = try await fixture.verifier.verifyAndDecodeNotification(try await fixture.subscribed(appAppleId: 42))
    }

    @Test("a tampered payload")
    func tamperedPayload() async throws {
        let fixture = try Fixture()
        let good = try await fixture.signer.sign(TestPayloads.transaction())
        let tampered = try JWSTampering.editingPayload(of: good) { $0["expiresDate"] = 4_102_444_800_000 }
        #expect(await refusal { _ = try await fixture.verifier.verifyAndDecodeTransaction(tampered) } == .invalidSignature)
    }

    @Test("a tampered header")
    func tamperedHeader() async throws {
        let fixture = try Fixture()
        let good = try await fixture.subscribed()
        let tampered = try JWSTampering.editingHeader(of: good) { $0["kid"] = "injected" }
        #expect(await notificationRefusal(fixture.verifier, tampered) == .invalidSignature)
        // A header whose JWS's signature failed is not remembered, though its chain verified.
        #expect(fixture.verifier.rememberedHeaders == 0)
        // Once the genuine header is remembered (a verified JWS's header is known by its bytes), refused alike.
        _ = try await fixture.verifier.verifyAndDecodeNotification(good)
        #expect(fixture.verifier.rememberedHeaders == 1)
        #expect(await notificationRefusal(fixture.verifier, tampered) == .invalidSignature)
        // A header equal to the remembered one as a Swift string but not in its bytes (U+212A, the Kelvin sign, for a
        // K) is no base64url at all.
        let header = try #require(good.split(separator: ".").first)
        #expect(header.contains("K"))
        let kelvin = good.replacingOccurrences(of: String(header), with: header.replacingOccurrences(of: "K", with: "\u{212A}"))
        #expect(String(kelvin.split(separator: ".")[0]) == String(header))
        #expect(await notificationRefusal(fixture.verifier, kelvin) == .invalidJWS)
    }

    @Test("an alg other than ES256", arguments: ["ES384", "ES512", "RS256", "HS256", "none", "es256"])
    func otherAlgorithm(alg: String) async throws {
        let fixture = try Fixture()
        let good = try await fixture.subscribed()
        let other = try JWSTampering.editingHeader(of: good) { $0["alg"] = alg }
        #expect(await notificationRefusal(fixture.verifier, other) == .unsupportedAlgorithm)
        // The same certificates under another alg, once the genuine header is remembered: refused alike.
        _ = try await fixture.verifier.verifyAndDecodeNotification(good)
        #expect(await notificationRefusal(fixture.verifier, other) == .unsupportedAlgorithm)
        let missing = try JWSTampering.editingHeader(of: good) { $0["alg"] = nil }
        #expect(await notificationRefusal(fixture.verifier, missing) == .unsupportedAlgorithm)
    }

    @Test("x5c with other than three certificates", arguments: [0, 1, 2, 4])
    func certificateCount(count: Int) async throws {
        let fixture = try Fixture()
        var signer = fixture.signer
        let all = fixture.chain.x5c + [fixture.chain.root]
        signer.x5c = Array(all.prefix(count))
        let jws: String
        if count == 0 {
            jws = try JWSTampering.editingHeader(of: try await fixture.subscribed()) { $0["x5c"] = nil }
        } else {
            jws = try await fixture.subscribed(signer: signer)
        }
        #expect(await notificationRefusal(fixture.verifier, jws) == .invalidCertificateChain)
    }

    @Test("an x5c entry that is not a base64 DER certificate")
    func badCertificateEncoding() async throws {
        let fixture = try Fixture()
        let jws = try JWSTampering.editingHeader(of: try await fixture.subscribed()) { header in
            var x5c = header["x5c"] as? [String] ?? []
            x5c[1] = "bm90IGEgY2VydGlmaWNhdGU="
            header["x5c"] = x5c
        }
        #expect(await notificationRefusal(fixture.verifier, jws) == .invalidCertificateChain)
    }

    @Test(
        "garbage input",
        arguments: ["", "abc", "a.b", "a.b.c", "a.b.c.d", "...", "eyJhbGciOiJFUzI1NiJ9.bm90IGpzb24.c2ln", "{\"signedPayload\":1}"]
    )
    func garbage(input: String) async throws {
        let fixture = try Fixture()
        #expect(await notificationRefusal(fixture.verifier, input) == .invalidJWS)
    }

    @Test("a correctly signed payload of the wrong shape")
    func malformedPayload() async throws {
        struct WrongShape: Encodable, Sendable {
            let notificationType = 7
            let signedDate = Date().appStoreMilliseconds
        }
        let fixture = try Fixture()
        let jws = try await fixture.signer.sign(WrongShape())
        #expect(await notificationRefusal(fixture.verifier, jws) == .malformedPayload)
    }
}
