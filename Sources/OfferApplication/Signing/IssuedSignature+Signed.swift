import OfferModel
import OfferSigning

extension IssuedSignature {
    /// The record of a legacy bundle, for `customer` (the bundle's own applicationUsername, or — a retention answer
    /// signed over an empty one — the customer it was decided for).
    init(_ bundle: SignedLegacyOffer, customer: String, channel: String = "api", requestIdentifier: String? = nil) {
        self.init(
            nonce: bundle.nonce,
            keyIdentifier: bundle.keyIdentifier,
            bundleIdentifier: bundle.bundleIdentifier,
            productIdentifier: bundle.productIdentifier,
            offerIdentifier: bundle.offerIdentifier,
            applicationUsername: customer,
            timestamp: bundle.timestamp,
            format: "legacy",
            channel: channel,
            requestIdentifier: requestIdentifier
        )
    }

    /// The record of a promotional offer V2 JWS signed for `customer` of the app `bundleIdentifier`.
    init(
        _ signed: SignedJWS<PromotionalOfferV2Claims>,
        bundleIdentifier: String,
        customer: String,
        channel: String = "api",
        requestIdentifier: String? = nil
    ) {
        self.init(
            nonce: signed.claims.nonce,
            keyIdentifier: signed.keyIdentifier,
            bundleIdentifier: bundleIdentifier,
            productIdentifier: signed.claims.productIdentifier,
            offerIdentifier: signed.claims.offerIdentifier,
            applicationUsername: customer,
            timestamp: signed.claims.iat * 1000,
            format: "jws",
            channel: channel,
            requestIdentifier: requestIdentifier
        )
    }
}
