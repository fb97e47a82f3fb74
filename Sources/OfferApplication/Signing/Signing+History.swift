import Foundation
import OfferEligibility
import OfferModel
import OfferSigning

extension Signing {
    /// ``signLegacy(_:)`` as if asked at `now`: the decision (and its log entry), the bundle's timestamp and the
    /// issued-signature record all carry `now`. For a history played through the real pipeline (`serve --demo`
    /// seeds its past days with it); no request reaches it.
    package func signLegacy(_ request: SignOfferRequest, at now: Date) async throws -> SignedLegacyOffer {
        let (app, offer) = try legacyOffer(request)
        let flow = try offerFlow(
            app: app,
            productIdentifier: offer.productIdentifier,
            offerIdentifier: offer.offerIdentifier,
            applicationUsername: offer.applicationUsername,
            transactionId: nil,
            channel: .legacy,
            sign: .immediate { key, _, context in
                let bundle = try OfferSigner.signLegacy(offer, with: key, timestamp: Int64((context.now.timeIntervalSince1970 * 1000).rounded(.down)))
                return SignedOutput(output: bundle, record: IssuedSignature(bundle, customer: bundle.applicationUsername))
            }
        )
        return try await pipeline.run(flow, now: now)
    }
}
