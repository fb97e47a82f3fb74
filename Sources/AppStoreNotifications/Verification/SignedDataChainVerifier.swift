import Crypto
import Foundation
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies a compact JWS signed by the App Store, the way Apple's `SignedDataVerifier` does, and decodes its payload.
///
/// 1. the JWS parses (``CompactJWS``: three base64url segments, a JSON header and payload) and its header's `alg` is
///    `ES256`;
/// 2. `x5c` holds exactly three base64 DER certificates;
/// 3. swift-certificates' `Verifier` builds leaf → `x5c[1]` → a configured root under `AppleMarkerPolicy` and
///    `RFC5280Policy` with expiry checked at the payload's `signedDate` (the current time if it has none). `x5c[2]` is
///    not offered to the chain builder — trust comes from the configured roots only — and must be the root the chain
///    ends at;
/// 4. the ES256 signature (raw `r || s`) over the JWS's signing input verifies with the leaf's key (swift-crypto, as
///    jwt-kit's `ES256PublicKey` checks it);
/// 5. only then is the payload, decoded once at step 1, handed over as the expected type.
///
/// A chain that verified is remembered by the exact bytes of its JWS's header (its `alg` and `x5c`, as Apple's
/// libraries cache verified chains), once that JWS's own signature verified: the next JWS with the same header skips
/// decoding it, parsing the certificates and building the chain when its `signedDate` falls inside all three
/// certificates' validity — the only part of the chain check that depends on the payload. A chain that failed, or a
/// header whose JWS's signature did not verify, is never remembered.
struct SignedDataChainVerifier: Sendable {
    private let trustedRoots: CertificateStore
    private let verifiedChains = VerifiedChains()

    init(trustedRoots: [Certificate]) {
        self.trustedRoots = CertificateStore(trustedRoots)
    }

    /// How many headers are remembered as verified (tests).
    var rememberedHeaders: Int { verifiedChains.count }

    /// Verifies `jws` at its `signedDate` (as Apple's libraries do) and decodes its payload; with `alsoValidAt`, every
    /// certificate of the chain must be valid at that time too (a real-time request: the chain valid now).
    func verify<Payload: Codable & Sendable>(
        _ jws: String,
        as _: Payload.Type,
        alsoValidAt: Date? = nil
    ) async throws(SignedDataVerificationError) -> Payload {
        let token = Array(jws.utf8)
        guard let parts = CompactJWS(token),
            let payloadBytes = Base64URL.decode(parts.payload),
            let signature = Base64URL.decode(parts.signature),
            let unverified = try? JSONDecoder().decode(SignedBody<Payload>.self, from: Data(payloadBytes))
        else {
            throw Self.notACompactJWS
        }
        // A header already verified is known by its bytes: the same chain signs many JWS with the same header.
        let headerKey = Array(parts.header)
        let remembered = verifiedChains.entry(for: headerKey)
        let certificates = remembered == nil ? try Self.certificates(in: Self.header(parts.header)) : []
        // A signedDate outside what a certificate's validity can express (years 1970 to 3000) is refused before
        // any date arithmetic: swift-certificates traps on dates it cannot encode.
        if let signedDate = unverified.signedDate, !(0...32_503_680_000_000).contains(signedDate) {
            throw SignedDataVerificationError(.malformedPayload, "signedDate \(signedDate) is not Unix time in milliseconds between 1970 and 3000")
        }
        let validationTime = unverified.signedDate.map { Date(appStoreMilliseconds: $0) } ?? Date()
        let leafKey: P256.Signing.PublicKey
        let validity: ClosedRange<Date>?
        // Remembered only once the JWS's own signature verifies (below): headers that differ in a byte are other keys,
        // and a stranger holding Apple's certificates could otherwise fill the table with headers nobody signed.
        var verifiedChain: VerifiedChains.Entry?
        if let remembered, remembered.validity.contains(validationTime) {
            leafKey = remembered.leafKey
            validity = remembered.validity
        } else {
            // Remembered, but the signedDate falls outside the chain's validity: checked in full, as a new chain is.
            let certificates = certificates.isEmpty ? try Self.certificates(in: Self.header(parts.header)) : certificates
            try await verifyChain(certificates, at: validationTime)
            guard let key = P256.Signing.PublicKey(certificates[0].publicKey) else {
                throw SignedDataVerificationError(.invalidCertificateChain, "the leaf certificate's key is not a P-256 key")
            }
            leafKey = key
            if let from = certificates.map(\.notValidBefore).max(), let until = certificates.map(\.notValidAfter).min(), from <= until {
                validity = from...until
                verifiedChain = VerifiedChains.Entry(validity: from...until, leafKey: key)
            } else {
                validity = nil
            }
        }
        if let alsoValidAt, !(validity?.contains(alsoValidAt) ?? false) {
            throw SignedDataVerificationError(
                .notFresh,
                """
                a certificate of the chain is not valid now (expired or not yet valid); a real-time request must be signed by a chain valid \
                when it arrives
                """
            )
        }
        guard let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            leafKey.isValidSignature(raw, for: SHA256.hash(data: parts.signingInput))
        else {
            throw SignedDataVerificationError(.invalidSignature, "the signature does not verify with the leaf certificate's key")
        }
        if let verifiedChain { verifiedChains.remember(headerKey, verifiedChain) }
        let verified = unverified
        guard let payload = verified.payload else {
            throw SignedDataVerificationError(
                .malformedPayload,
                "the payload is not a \(Payload.self): \(verified.decodingFailure ?? "unknown")"
            )
        }
        return payload
    }

    /// A JWS that does not split into its three parts, or whose header or payload is no base64url JSON.
    private static let notACompactJWS = SignedDataVerificationError(
        .invalidJWS,
        "not a compact JWS: three base64url parts separated by dots, a JSON header and a JSON payload"
    )

    /// The header's `alg` and `x5c`: all a JWS of the App Store's needs.
    private struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    /// The header segment decoded; its `alg` must be `ES256`.
    private static func header(_ segment: ArraySlice<UInt8>) throws(SignedDataVerificationError) -> Header {
        guard let bytes = Base64URL.decode(segment), let header = try? JSONDecoder().decode(Header.self, from: Data(bytes)) else {
            throw Self.notACompactJWS
        }
        guard header.alg == "ES256" else {
            throw SignedDataVerificationError(
                .unsupportedAlgorithm,
                "alg must be ES256, found \(header.alg.map { "\"\($0)\"" } ?? "none")"
            )
        }
        return header
    }

    /// The three certificates of the `x5c` header, parsed.
    private static func certificates(in header: Header) throws(SignedDataVerificationError) -> [Certificate] {
        guard let x5c = header.x5c else {
            throw SignedDataVerificationError(.invalidCertificateChain, "the header has no x5c certificate chain")
        }
        guard x5c.count == 3 else {
            throw SignedDataVerificationError(
                .invalidCertificateChain,
                "x5c must hold exactly 3 certificates (leaf, intermediate, root), found \(x5c.count)"
            )
        }
        var certificates: [Certificate] = []
        for (index, entry) in x5c.enumerated() {
            guard let der = Data(base64Encoded: entry), let certificate = try? Certificate(derEncoded: Array(der)) else {
                throw SignedDataVerificationError(
                    .invalidCertificateChain,
                    "x5c[\(index)] is not a base64 DER certificate"
                )
            }
            certificates.append(certificate)
        }
        return certificates
    }

    /// Builds and checks leaf → intermediate → trusted root at `validationTime`.
    private func verifyChain(_ certificates: [Certificate], at validationTime: Date) async throws(SignedDataVerificationError) {
        var verifier = Verifier(rootCertificates: trustedRoots) {
            AppleMarkerPolicy()
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
        }
        let result = await verifier.validate(leaf: certificates[0], intermediates: CertificateStore([certificates[1]]))
        switch result {
        case .validCertificate(let chain):
            guard chain.last == certificates[2] else {
                throw SignedDataVerificationError(
                    .untrustedRoot,
                    "x5c[2] (\(certificates[2].subject)) is not the trusted root the chain ends at"
                )
            }
        case .couldNotValidate(let failures):
            throw ChainFailure.error(for: failures, at: validationTime)
        }
    }
}

/// Chains that verified, by the exact bytes of the JWS header that carried them (its `alg` and `x5c`): the leaf's key
/// and the span in which all three certificates are valid. Bounded (64 headers of at most 16 KiB; the App Store signs
/// with a handful of chains at a time), emptied when full.
final class VerifiedChains: Sendable {
    struct Entry: Sendable {
        let validity: ClosedRange<Date>
        let leafKey: P256.Signing.PublicKey
    }

    private let entries = Mutex<[[UInt8]: Entry]>([:])

    /// The longest header remembered: an App Store header (three certificates) is about 5 KiB.
    static let longestHeader = 16 * 1024

    func entry(for key: [UInt8]) -> Entry? { entries.withLock { $0[key] } }

    var count: Int { entries.withLock { $0.count } }

    func remember(_ key: [UInt8], _ entry: Entry) {
        guard key.count <= Self.longestHeader else { return }
        entries.withLock { entries in
            if entries.count >= 64 { entries.removeAll() }
            entries[key] = entry
        }
    }
}
