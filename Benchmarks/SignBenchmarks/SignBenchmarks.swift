import Benchmark
import Crypto
import Foundation
import OfferSigning

// The signing path alone, without HTTP: what DESIGN.md §6 compares with `openssl speed ecdsap256`.
//
//   OFFER_SIGNER_BENCHMARKS=1 swift package --scratch-path .build-bench benchmark --target SignBenchmarks

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .cpuTotal, .throughput, .mallocCountTotal],
        warmupIterations: 100,
        maxDuration: .seconds(3),
        maxIterations: 100_000
    )
    let key = try! SigningKey.generate(keyIdentifier: "BENCHKEY01")
    let offer = PromotionalOffer(
        bundleIdentifier: "com.example.app",
        productIdentifier: "com.example.monthly",
        offerIdentifier: "winback_50",
        applicationUsername: "user-0001"
    )
    let payload = LegacyOfferPayload(offer: offer, keyIdentifier: key.keyIdentifier, nonce: UUID().uuidString, timestamp: 1_700_000_000_000).bytes
    let signature = try! key.privateKey.signature(for: payload)

    // The primitives, for the ratio: one ECDSA P-256 sign, one verify.
    Benchmark("P256 sign (primitive)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try key.privateKey.signature(for: payload)) }
    }
    Benchmark("P256 verify (primitive)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(key.publicKey.isValidSignature(signature, for: payload)) }
    }
    // Sign alone: payload, nonce, timestamp, ECDSA, DER, base64 — what a service without a self-check does.
    Benchmark("legacy sign (no self-verify)") { benchmark in
        for _ in benchmark.scaledIterations {
            let bytes = LegacyOfferPayload(
                offer: offer,
                keyIdentifier: key.keyIdentifier,
                nonce: UUID().uuidString,
                timestamp: OfferSigner.currentTimestamp()
            ).bytes
            blackHole(try key.privateKey.signature(for: bytes).derRepresentation.base64EncodedString())
        }
    }
    // The service's signing path: validate, payload, sign, self-verify, DER, base64.
    Benchmark("legacy sign + self-verify (OfferSigner.signLegacy)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try OfferSigner.signLegacy(offer, with: key)) }
    }
}
