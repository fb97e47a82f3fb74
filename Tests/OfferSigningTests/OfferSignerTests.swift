import Crypto
import Foundation
import Testing

@testable import OfferSigning

@Suite struct OfferSignerTests {
    let key = try! SigningKey(keyIdentifier: "ABC123DEFG", pemRepresentation: KeyFixtures.pkcs8P256)
    let offer = PromotionalOffer(
        bundleIdentifier: "com.example.app",
        productIdentifier: "com.example.monthly",
        offerIdentifier: "winback_50",
        applicationUsername: "User-0001"
    )

    @Test func bundleCarriesWhatWasSignedAndVerifies() throws {
        let nonce = try #require(UUID(uuidString: "7A0E1C2B-3D4E-4F50-8A6B-7C8D9E0F1A2B"))
        let bundle = try OfferSigner.signLegacy(offer, with: key, nonce: nonce, timestamp: 1_700_000_000_000)
        #expect(bundle.format == "legacy")
        #expect(bundle.applicationUsername == "user-0001")
        #expect(bundle.nonce == "7a0e1c2b-3d4e-4f50-8a6b-7c8d9e0f1a2b")
        #expect(bundle.keyIdentifier == "ABC123DEFG")
        #expect(bundle.timestamp == 1_700_000_000_000)
        let der = try #require(Data(base64Encoded: bundle.signature))
        let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
        #expect(key.publicKey.isValidSignature(signature, for: bundle.payload.bytes))
        #expect(der.first == 0x30)  // DER SEQUENCE, not raw r||s
    }

    @Test func everySignatureHasAFreshLowerCaseV4Nonce() throws {
        var nonces = Set<String>()
        for _ in 0..<50 {
            let bundle = try OfferSigner.signLegacy(offer, with: key)
            #expect(bundle.nonce == bundle.nonce.lowercased())
            let uuid = try #require(UUID(uuidString: bundle.nonce))
            #expect(uuid.uuid.6 >> 4 == 4)  // version 4
            nonces.insert(bundle.nonce)
        }
        #expect(nonces.count == 50)
    }

    @Test func timestampIsNowInMilliseconds() throws {
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let bundle = try OfferSigner.signLegacy(offer, with: key)
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        #expect((before...after).contains(bundle.timestamp))
    }

    @Test func aFailedSelfCheckNeverReturnsTheBundle() throws {
        let otherPublicKey = P256.Signing.PrivateKey().publicKey
        let error = #expect(throws: OfferSigningError.self) {
            try OfferSigner.signLegacy(offer, with: key, nonce: UUID(), timestamp: 1, selfCheckKey: otherPublicKey)
        }
        #expect(error?.code == .selfCheckFailed)
    }

    @Test func invalidFieldsAreNeverSigned() {
        var bad = offer
        bad.offerIdentifier = "win\u{2063}back"
        let error = #expect(throws: OfferSigningError.self) { try OfferSigner.signLegacy(bad, with: key) }
        #expect(error?.field == "offerIdentifier")
    }

    static let opensslPath: String? = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test("the openssl command line verifies our signature", .enabled(if: opensslPath != nil, "needs the openssl command line (CI installs it)"))
    func opensslVerifiesSignature() throws {
        let openssl = try #require(Self.opensslPath)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("offer-signer-openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for username in ["user-0001", "ÅSA@Example.COM", "8C1D6A9E-0B2F-4C3D-9E8F-1A2B3C4D5E6F"] {
            var offer = self.offer
            offer.applicationUsername = username
            let bundle = try OfferSigner.signLegacy(offer, with: key)
            let pub = directory.appendingPathComponent("pub.pem")
            let sig = directory.appendingPathComponent("sig.der")
            let msg = directory.appendingPathComponent("msg")
            try key.verificationKey.pemRepresentation.write(to: pub, atomically: true, encoding: .utf8)
            try #require(Data(base64Encoded: bundle.signature)).write(to: sig)
            try Data(bundle.payload.bytes).write(to: msg)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: openssl)
            process.arguments = ["dgst", "-sha256", "-verify", pub.path, "-signature", sig.path, msg.path]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.run()
            process.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "openssl said: \(text)")
            #expect(text.contains("Verified OK"))
        }
    }

    @Test("the DER written from r and s is swift-crypto's, for 2,000 signatures and the edge values")
    func derBytesMatchSwiftCrypto() throws {
        let key = P256.Signing.PrivateKey()
        var signatures = try (0..<2_000).map { _ in try key.signature(for: Data(UInt64.random(in: 0...UInt64.max).description.utf8)) }
        // r and s with leading zero bytes, a high first bit, one, zero.
        let halves: [[UInt8]] = [
            [0x80] + [UInt8](repeating: 0x11, count: 31), [0x7F] + [UInt8](repeating: 0xFF, count: 31),
            [0, 0, 0x80] + [UInt8](repeating: 0x22, count: 29), [0, 0, 0x01] + [UInt8](repeating: 0x33, count: 29),
            [UInt8](repeating: 0, count: 31) + [1], [UInt8](repeating: 0, count: 31) + [0x80], [UInt8](repeating: 0, count: 32),
        ]
        for r in halves {
            for s in halves {
                signatures.append(try P256.Signing.ECDSASignature(rawRepresentation: r + s))
            }
        }
        for signature in signatures {
            #expect(signature.derBytes == [UInt8](signature.derRepresentation))
        }
    }
}
