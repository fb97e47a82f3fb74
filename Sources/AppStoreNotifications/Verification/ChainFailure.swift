import Foundation
import X509

/// Names the reason swift-certificates' `Verifier` refused a chain, as a ``SignedDataVerificationError``.
///
/// The decision is the library's; this only classifies it. No chain reaching a trusted root at all means
/// ``SignedDataVerificationError/Code/untrustedRoot``. A chain that reached one but failed a policy is examined: a
/// missing Apple marker, then a certificate outside its validity at the validation time, else some other RFC 5280 rule.
enum ChainFailure {
    static func error(
        for failures: [CertificateValidationResult.PolicyFailure],
        at validationTime: Date
    ) -> SignedDataVerificationError {
        guard let failure = failures.first else {
            return SignedDataVerificationError(
                .untrustedRoot,
                "no chain from the leaf through the intermediate to a trusted root certificate"
            )
        }
        let chain = Array(failure.chain)
        if let problem = AppleMarkerPolicy.problem(in: chain) {
            let code: SignedDataVerificationError.Code =
                chain.count == 3 ? .missingMarkerExtension : .invalidCertificateChain
            return SignedDataVerificationError(code, problem)
        }
        let at = "at the signing date \(validationTime)"
        if let expired = chain.first(where: { $0.notValidAfter < validationTime }) {
            return SignedDataVerificationError(
                .certificateExpired,
                "\(expired.subject) expired \(expired.notValidAfter), before \(at)"
            )
        }
        if let early = chain.first(where: { $0.notValidBefore > validationTime }) {
            return SignedDataVerificationError(
                .certificateNotYetValid,
                "\(early.subject) is valid only from \(early.notValidBefore), after \(at)"
            )
        }
        return SignedDataVerificationError(
            .invalidCertificateChain,
            "the certificate chain is refused: \(failure.policyFailureReason)"
        )
    }
}
