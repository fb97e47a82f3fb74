import SwiftASN1
import X509

/// The App Store's own chain rule, as a swift-certificates policy: exactly leaf → intermediate → root, the leaf
/// carrying the receipt-signing marker and the intermediate the WWDR intermediate marker (as Apple's
/// `AppStoreOIDPolicy` in app-store-server-library-swift). Everything else (signatures, basic constraints, key usage,
/// validity at the signing date) is `RFC5280Policy`'s job.
struct AppleMarkerPolicy: VerifierPolicy {
    /// Marker on the leaf (App Store receipt signing): 1.2.840.113635.100.6.11.1.
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    /// Marker on the intermediate (Apple Worldwide Developer Relations): 1.2.840.113635.100.6.2.1.
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// The markers are checked for presence only; neither is critical, so no critical extension is claimed.
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        if let problem = Self.problem(in: Array(chain)) {
            return .failsToMeetPolicy(reason: problem)
        }
        return .meetsPolicy
    }

    /// What is wrong with `chain` under this policy, or `nil`. Also used to name the reason of a refused chain.
    static func problem(in chain: [Certificate]) -> String? {
        guard chain.count == 3 else {
            return "expected leaf, intermediate and root, found a chain of \(chain.count)"
        }
        guard chain[0].extensions.contains(where: { $0.oid == leafMarker }) else {
            return "the leaf certificate lacks Apple's marker extension \(leafMarker)"
        }
        guard chain[1].extensions.contains(where: { $0.oid == intermediateMarker }) else {
            return "the intermediate certificate lacks Apple's marker extension \(intermediateMarker)"
        }
        return nil
    }
}
