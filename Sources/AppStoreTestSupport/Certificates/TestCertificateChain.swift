public import Crypto
public import Foundation
public import SwiftASN1
public import X509

/// A root → intermediate → leaf certificate chain built in code, shaped like the App Store's: P-256 keys,
/// ECDSA-SHA256, CA constraints on root and intermediate, and Apple's marker extensions on the intermediate
/// (1.2.840.113635.100.6.2.1) and the leaf (1.2.840.113635.100.6.11.1).
///
/// For tests only: every chain has fresh random keys, so two chains never trust each other.
///
/// ## Usage
///
/// ```swift
/// let chain = try TestCertificateChain()
/// let verifier = try SignedDataVerifier(bundleIdentifier: TestPayloads.bundleIdentifier, environments: [.sandbox],
///                                       trustedRoots: [chain.root])
/// let signer = TestJWSSigner(chain: chain)
///
/// var options = TestCertificateChain.Options()
/// options.leafMarker = false                                  // refused: missing_marker_extension
/// options.leafValidity = past...past.addingTimeInterval(60)   // refused at a later signedDate: certificate_expired
/// let broken = try TestCertificateChain(options)
/// ```
public struct TestCertificateChain: Sendable {
    /// How to build a chain. The defaults give a chain the App Store could have issued, valid from a day ago for a year.
    public struct Options: Sendable {
        /// When the root is valid. Default: ten years either side of now.
        public var rootValidity: ClosedRange<Date>

        /// When the intermediate is valid. Default: five years either side of now.
        public var intermediateValidity: ClosedRange<Date>

        /// When the leaf is valid. Default: from a day ago for a year.
        public var leafValidity: ClosedRange<Date>

        /// Whether the leaf carries Apple's receipt-signing marker 1.2.840.113635.100.6.11.1. Default `true`.
        public var leafMarker: Bool

        /// Whether the intermediate carries Apple's WWDR marker 1.2.840.113635.100.6.2.1. Default `true`.
        public var intermediateMarker: Bool

        /// The root's common name. Give two chains the same name to build a look-alike of a trusted root.
        public var rootCommonName: String

        /// Default options; see each property.
        public init(now: Date = Date()) {
            let day: TimeInterval = 86_400
            self.rootValidity = now.addingTimeInterval(-3650 * day)...now.addingTimeInterval(3650 * day)
            self.intermediateValidity = now.addingTimeInterval(-1825 * day)...now.addingTimeInterval(1825 * day)
            self.leafValidity = now.addingTimeInterval(-day)...now.addingTimeInterval(365 * day)
            self.leafMarker = true
            self.intermediateMarker = true
            self.rootCommonName = "OfferSigner Test Root CA"
        }
    }

    /// Apple's marker on the leaf: 1.2.840.113635.100.6.11.1.
    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// Apple's marker on the intermediate: 1.2.840.113635.100.6.2.1.
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// The self-signed root: pass it as a trusted root.
    public let root: Certificate

    /// The intermediate, signed by ``root``.
    public let intermediate: Certificate

    /// The leaf, signed by ``intermediate``: its key signs the JWS.
    public let leaf: Certificate

    /// The root's private key.
    public let rootKey: P256.Signing.PrivateKey

    /// The intermediate's private key.
    public let intermediateKey: P256.Signing.PrivateKey

    /// The leaf's private key.
    public let leafKey: P256.Signing.PrivateKey

    /// `[leaf, intermediate, root]`, the order of the `x5c` header.
    public var x5c: [Certificate] { [leaf, intermediate, root] }

    /// Builds a fresh chain.
    ///
    /// - Parameter options: Validity windows, markers and root name; default: a good chain.
    /// - Throws: If swift-certificates cannot build a certificate (it should not).
    public init(_ options: Options = Options()) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()

        let rootName = try DistinguishedName {
            CommonName(options.rootCommonName)
            OrganizationName("OfferSigner Tests")
        }
        let intermediateName = try DistinguishedName {
            CommonName("OfferSigner Test Intermediate CA")
            OrganizationName("OfferSigner Tests")
        }
        let leafName = try DistinguishedName {
            CommonName("OfferSigner Test App Store Signer")
            OrganizationName("OfferSigner Tests")
        }

        let root = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(rootKey.publicKey),
            notValidBefore: options.rootValidity.lowerBound,
            notValidAfter: options.rootValidity.upperBound,
            issuer: rootName,
            subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey)
        )
        let intermediate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(intermediateKey.publicKey),
            notValidBefore: options.intermediateValidity.lowerBound,
            notValidAfter: options.intermediateValidity.upperBound,
            issuer: rootName,
            subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if options.intermediateMarker {
                    Self.marker(Self.intermediateMarkerOID)
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey)
        )
        let leaf = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(leafKey.publicKey),
            notValidBefore: options.leafValidity.lowerBound,
            notValidAfter: options.leafValidity.upperBound,
            issuer: intermediateName,
            subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if options.leafMarker {
                    Self.marker(Self.leafMarkerOID)
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(intermediateKey)
        )

        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
    }

    /// A non-critical marker extension whose value is DER NULL, as in Apple's certificates.
    private static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }
}
