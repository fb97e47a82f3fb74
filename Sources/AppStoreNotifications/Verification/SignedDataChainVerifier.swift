import Crypto
import Foundation
import JWTKit
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Verifies a compact JWS signed by the App Store, the way Apple's `SignedDataVerifier` does, and decodes its payload.
///
/// 1. the JWS parses (jwt-kit's `DefaultJWTParser`) and its header's `alg` is `ES256`;
/// 2. `x5c` holds exactly three base64 DER certificates;
/// 3. swift-certificates' `Verifier` builds leaf → `x5c[1]` → a configured root under `AppleMarkerPolicy` and
///    `RFC5280Policy` with expiry checked at the payload's `signedDate` (the current time if it has none). `x5c[2]` is
///    not offered to the chain builder — trust comes from the configured roots only — and must be the root the chain
///    ends at;
/// 4. the ES256 signature (raw `r || s`) over the JWS's signing input verifies with the leaf's key (swift-crypto, as
///    jwt-kit's `ES256PublicKey` checks it);
/// 5. only then is the payload, decoded once at step 1, handed over as the expected type.
///
/// A chain that verified is remembered by its exact `x5c` text (as Apple's libraries cache verified chains): the next
/// JWS with the same certificates skips parsing and chain building when its `signedDate` falls inside all three
/// certificates' validity — the only part of the chain check that depends on the payload. A chain that failed is
/// never remembered.
struct SignedDataChainVerifier: Sendable {
    private let trustedRoots: CertificateStore
    private let verifiedChains = VerifiedChains()

    init(trustedRoots: [Certificate]) {
        self.trustedRoots = CertificateStore(trustedRoots)
    }

    /// Verifies `jws` at its `signedDate` (as Apple's libraries do) and decodes its payload; with `alsoValidAt`, every
    /// certificate of the chain must be valid at that time too (a real-time request: the chain valid now).
    func verify<Payload: Codable & Sendable>(
        _ jws: String,
        as _: Payload.Type,
        alsoValidAt: Date? = nil
    ) async throws(SignedDataVerificationError) -> Payload {
        let token = Array(jws.utf8)
        let parser = DefaultJWTParser(jsonDecoder: JSONDecoder())

        let header: JWTHeader
        let unverified: SignedBody<Payload>
        let signature: Data
        do {
            (header, unverified, signature) = try parser.parse(token, as: SignedBody<Payload>.self)
        } catch {
            throw SignedDataVerificationError(
                .invalidJWS,
                "not a compact JWS: three base64url parts separated by dots, a JSON header and a JSON payload"
            )
        }

        guard header.alg == "ES256" else {
            throw SignedDataVerificationError(
                .unsupportedAlgorithm,
                "alg must be ES256, found \(header.alg.map { "\"\($0)\"" } ?? "none")"
            )
        }
        let chainKey = header.x5c.flatMap { $0.count == 3 ? $0.joined(separator: ",") : nil }
        let remembered = chainKey.flatMap { verifiedChains.entry(for: $0) }
        let certificates = remembered == nil ? try Self.certificates(in: header) : []
        // A signedDate outside what a certificate's validity can express (years 1970 to 3000) is refused before
        // any date arithmetic: swift-certificates traps on dates it cannot encode.
        if let signedDate = unverified.signedDate, !(0...32_503_680_000_000).contains(signedDate) {
            throw SignedDataVerificationError(.malformedPayload, "signedDate \(signedDate) is not Unix time in milliseconds between 1970 and 3000")
        }
        let validationTime = unverified.signedDate.map { Date(appStoreMilliseconds: $0) } ?? Date()
        let leafKey: P256.Signing.PublicKey
        let validity: ClosedRange<Date>?
        if let remembered, remembered.validity.contains(validationTime) {
            leafKey = remembered.leafKey
            validity = remembered.validity
        } else {
            let certificates = certificates.isEmpty ? try Self.certificates(in: header) : certificates
            try await verifyChain(certificates, at: validationTime)
            guard let key = P256.Signing.PublicKey(certificates[0].publicKey) else {
                throw SignedDataVerificationError(.invalidCertificateChain, "the leaf certificate's key is not a P-256 key")
            }
            leafKey = key
            if let from = certificates.map(\.notValidBefore).max(), let until = certificates.map(\.notValidAfter).min(), from <= until {
                validity = from...until
                if let chainKey { verifiedChains.remember(chainKey, VerifiedChains.Entry(validity: from...until, leafKey: key)) }
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
        // The signing input is the token up to its second dot (the parser checked there are exactly two).
        let signingInput = token[..<(token.lastIndex(of: UInt8(ascii: ".")) ?? token.endIndex)]
        guard let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            leafKey.isValidSignature(raw, for: SHA256.hash(data: signingInput))
        else {
            throw SignedDataVerificationError(.invalidSignature, "the signature does not verify with the leaf certificate's key")
        }
        let verified = unverified
        guard let payload = verified.payload else {
            throw SignedDataVerificationError(
                .malformedPayload,
                "the payload is not a \(Payload.self): \(verified.decodingFailure ?? "unknown")"
            )
        }
        return payload
    }

    /// The three certificates of the `x5c` header, parsed.
    private static func certificates(in header: JWTHeader) throws(SignedDataVerificationError) -> [Certificate] {
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

/// Chains that verified, by their `x5c` text: the leaf's key and the span in which all three certificates are
/// valid. Bounded (64 chains; the App Store signs with a handful at a time), emptied when full.
final class VerifiedChains: Sendable {
    struct Entry: Sendable {
        let validity: ClosedRange<Date>
        let leafKey: P256.Signing.PublicKey
    }

    private let entries = Mutex<[String: Entry]>([:])

    func entry(for key: String) -> Entry? { entries.withLock { $0[key] } }

    func remember(_ key: String, _ entry: Entry) {
        entries.withLock { entries in
            if entries.count >= 64 { entries.removeAll() }
            entries[key] = entry
        }
    }
}
