import AppStoreNotifications
import AppStoreTestSupport
import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@Suite("Trusted roots and configuration")
struct TrustedRootTests {
    @Test("the bundled Apple Root CA - G3 has the pinned SHA-256 fingerprint")
    func bundledRootFingerprint() throws {
        let root = try TrustedRootCertificates.appleRootCAG3()
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined()
        #expect(fingerprint == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        #expect(fingerprint == TrustedRootCertificates.appleRootCAG3SHA256Fingerprint)
        #expect(root.subject.description.contains("Apple Root CA - G3"))
    }

    @Test("by default a verifier trusts exactly the bundled Apple root and accepts Production only")
    func defaultConfiguration() throws {
        let verifier = try SignedDataVerifier(bundleIdentifier: TestPayloads.bundleIdentifier, appAppleId: Fixture.appAppleId)
        #expect(verifier.trustedRoots == [try TrustedRootCertificates.appleRootCAG3()])
        #expect(verifier.environments == [.production])
    }

    @Test("data signed by a test chain is refused by the default verifier")
    func testChainIsNotAppleTrusted() async throws {
        let fixture = try Fixture()
        let verifier = try SignedDataVerifier(
            bundleIdentifier: TestPayloads.bundleIdentifier,
            appAppleId: Fixture.appAppleId,
            environments: [.production, .sandbox]
        )
        let error = await #expect(throws: SignedDataVerificationError.self) {
            try await verifier.verifyAndDecodeNotification(try await fixture.subscribed())
        }
        #expect(error?.code == .untrustedRoot)
    }

    @Test("root certificates load from PEM and from DER")
    func loadsPEMAndDER() throws {
        let pem = Array(TrustedRootCertificates.appleRootCAG3PEM.utf8)
        let fromPEM = try TrustedRootCertificates.certificate(pemOrDER: pem)
        var serializer = DER.Serializer()
        try serializer.serialize(fromPEM)
        let fromDER = try TrustedRootCertificates.certificate(pemOrDER: serializer.serializedBytes)
        #expect(fromPEM == fromDER)
        let error = #expect(throws: SignedDataVerificationError.self) {
            try TrustedRootCertificates.certificate(pemOrDER: Array("not a certificate".utf8))
        }
        #expect(error?.code == .invalidConfiguration)
    }

    @Test("Production without appAppleId, no roots or no environments is a configuration error")
    func configurationErrors() throws {
        let root = try TestCertificateChain().root
        for make in [
            { try SignedDataVerifier(bundleIdentifier: "b") },
            { try SignedDataVerifier(bundleIdentifier: "b", environments: [.sandbox], trustedRoots: []) },
            { try SignedDataVerifier(bundleIdentifier: "b", environments: [], trustedRoots: [root]) },
        ] as [() throws -> SignedDataVerifier] {
            let error = #expect(throws: SignedDataVerificationError.self) { try make() }
            #expect(error?.code == .invalidConfiguration)
        }
        _ = try SignedDataVerifier(bundleIdentifier: "b", environments: [.sandbox], trustedRoots: [root])
    }
}
