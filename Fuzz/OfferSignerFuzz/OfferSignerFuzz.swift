// Coverage-guided fuzz targets (libFuzzer) for the parsers that read what the network or an operator sends.
//
// Built only with OFFER_SIGNER_FUZZ=1 (see Package.swift and IntegrationTests/fuzz.sh); the target is chosen at run
// time by FUZZ_TARGET:
//
//   jws          JWSOfferVerifier.decode and .verify. An input that starts with `{` is taken as the claims of
//                a token the harness signs with a key of the ring (so every claim check is reached); any
//                other input is the compact token itself.
//   legacy       JSON → SignedLegacyOffer → LegacyOfferVerifier.verify. A `"signature": "sign-me"` is
//                replaced by the real signature of the bundle's payload (so the valid path is reached).
//   pem          SigningKey(keyIdentifier:pemRepresentation:) and VerificationKey(keyIdentifier:publicKeyPEM:).
//   policy       OfferPolicy(text:) (YAML and JSON).
//   signed-data  SignedDataVerifier: an input that starts with `{` is the payload of a JWS the harness signs
//                with a test chain the verifier trusts (notification, transaction and renewal info are each
//                tried); any other input is verified as a compact JWS.
//   json         The server's request reading: the duplicate-key scan, then the verify body's decoding and
//                the checks that turn it into a legacy bundle.
//
// Built with -sanitize=fuzzer -parse-as-library. SwiftPM links a debug executable with `main` aliased to
// `offer_signer_fuzz_main` (so that tests could import it), which replaces libFuzzer's own `main`: that function
// is defined at the end of this file and hands over to libFuzzer's driver.

import AppStoreNotifications
import AppStoreTestSupport
import Crypto
import Dispatch
import Foundation
import OfferEligibility
import OfferSigning
import SwiftASN1
import X509

@testable import OfferApplication
@testable import OfferSignerServer

/// The target FUZZ_TARGET names, read once.
let fuzzTarget: String = {
    let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""
    let known = ["jws", "legacy", "pem", "policy", "signed-data", "json"]
    guard known.contains(name) else {
        FileHandle.standardError.write(Data("FUZZ_TARGET must be one of \(known.joined(separator: ", ")) (got \"\(name)\")\n".utf8))
        exit(2)
    }
    return name
}()

/// A key ring with one active, one retired and one revoked key, so every key-state branch is reachable.
struct Keys: Sendable {
    let active: SigningKey
    let ring: KeyRing

    static let shared: Keys = {
        do {
            let active = try SigningKey.generate(keyIdentifier: "FUZZKEY001")
            let retired = try SigningKey.generate(keyIdentifier: "FUZZKEY002")
            let revoked = try SigningKey.generate(keyIdentifier: "FUZZKEY003")
            let ring = try KeyRing(
                keys: [active, retired, revoked].map { KeyRing.Entry(key: $0, source: "fuzz") },
                activeKeyIdentifier: "FUZZKEY001",
                revokedKeyIdentifiers: ["FUZZKEY003"]
            )
            return Keys(active: active, ring: ring)
        } catch {
            fatalError("cannot build the fuzz key ring: \(error)")
        }
    }()
}

/// A test chain and a verifier that trusts it.
struct SignedData: Sendable {
    let chain: TestCertificateChain
    let verifier: SignedDataVerifier
    let x5c: [String]

    static let shared: SignedData = {
        do {
            let chain = try TestCertificateChain()
            let verifier = try SignedDataVerifier(
                bundleIdentifier: TestPayloads.bundleIdentifier,
                appAppleId: 1234,
                environments: [.sandbox, .production],
                trustedRoots: [chain.root]
            )
            let x5c = try chain.x5c.map { certificate -> String in
                var serializer = DER.Serializer()
                try serializer.serialize(certificate)
                return Data(serializer.serializedBytes).base64EncodedString()
            }
            return SignedData(chain: chain, verifier: verifier, x5c: x5c)
        } catch {
            fatalError("cannot build the fuzz certificate chain: \(error)")
        }
    }()
}

/// Runs async work to completion from the synchronous libFuzzer callback.
final class Completion: @unchecked Sendable {
    let semaphore = DispatchSemaphore(value: 0)
}

func runBlocking(_ body: @escaping @Sendable () async -> Void) {
    let done = Completion()
    Task {
        await body()
        done.semaphore.signal()
    }
    done.semaphore.wait()
}

func base64URL(_ bytes: some DataProtocol) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// A compact ES256 JWS of `payload` with `header`, signed by `key`.
func es256(header: [String: Any], payload: some DataProtocol, key: P256.Signing.PrivateKey) -> String {
    let headerData = (try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) ?? Data("{}".utf8)
    let input = base64URL(headerData) + "." + base64URL(payload)
    let signature = (try? key.signature(for: Data(input.utf8)).rawRepresentation) ?? Data()
    return input + "." + base64URL(signature)
}

func fuzzJWS(_ data: Data) {
    let keys = Keys.shared
    let token: String
    if data.first == UInt8(ascii: "{") {
        token = es256(header: ["alg": "ES256", "kid": "FUZZKEY001", "typ": "JWT"], payload: data, key: keys.active.privateKey)
    } else {
        token = String(decoding: data, as: UTF8.self)
    }
    _ = JWSOfferVerifier.decode(token)
    runBlocking {
        _ = await JWSOfferVerifier.verify(token, keyRing: keys.ring)
    }
}

func fuzzLegacy(_ data: Data) {
    let keys = Keys.shared
    guard var bundle = try? JSONDecoder().decode(SignedLegacyOffer.self, from: data) else { return }
    if bundle.signature == "sign-me" {
        let offer = PromotionalOffer(
            bundleIdentifier: bundle.bundleIdentifier,
            productIdentifier: bundle.productIdentifier,
            offerIdentifier: bundle.offerIdentifier,
            applicationUsername: bundle.applicationUsername
        )
        let payload = LegacyOfferPayload(offer: offer, keyIdentifier: bundle.keyIdentifier, nonce: bundle.nonce, timestamp: bundle.timestamp)
        if let signature = try? keys.active.privateKey.signature(for: Data(payload.bytes)) {
            bundle.signature = signature.derRepresentation.base64EncodedString()
        }
    }
    _ = LegacyOfferVerifier.verify(bundle, keyRing: keys.ring)
    _ = LegacyOfferVerifier.verify(bundle, key: keys.active.verificationKey, keyState: .active)
}

func fuzzPEM(_ data: Data) {
    let text = String(decoding: data, as: UTF8.self)
    _ = try? SigningKey(keyIdentifier: "FUZZKEY001", pemRepresentation: text, source: "fuzz")
    _ = try? VerificationKey(keyIdentifier: "FUZZKEY001", publicKeyPEM: text)
}

func fuzzPolicy(_ data: Data) {
    _ = try? OfferPolicy(text: String(decoding: data, as: UTF8.self))
}

func fuzzSignedData(_ data: Data) {
    let signed = SignedData.shared
    let token: String
    if data.first == UInt8(ascii: "{") {
        token = es256(header: ["alg": "ES256", "x5c": signed.x5c], payload: data, key: signed.chain.leafKey)
    } else {
        token = String(decoding: data, as: UTF8.self)
    }
    runBlocking {
        _ = try? await signed.verifier.verifyAndDecodeNotificationContents(token)
        _ = try? await signed.verifier.verifyAndDecodeTransaction(token)
        _ = try? await signed.verifier.verifyAndDecodeRenewalInfo(token)
        _ = try? await signed.verifier.verifyAndDecodeRealtimeRequest(token)
    }
}

func fuzzJSON(_ data: Data) {
    _ = StrictJSON.violation(in: data)
    do {
        let body = try JSONDecoder().decode(VerifyRequest.self, from: data)
        _ = body.isJWS
        _ = try? body.legacyBundle(defaultBundleIdentifier: "com.example.app")
    } catch let error as DecodingError {
        _ = APIError(error)
    } catch {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    switch fuzzTarget {
    case "jws": fuzzJWS(data)
    case "legacy": fuzzLegacy(data)
    case "pem": fuzzPEM(data)
    case "policy": fuzzPolicy(data)
    case "signed-data": fuzzSignedData(data)
    default: fuzzJSON(data)
    }
    return 0
}

/// libFuzzer's driver (compiler-rt), called from the `main` below.
@_extern(c, "LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The process's `main` (SwiftPM aliases `main` to this name): runs libFuzzer with the process's arguments.
@_cdecl("offer_signer_fuzz_main")
public func offerSignerFuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { start, count in fuzzTestOneInput(start, count) }
}
