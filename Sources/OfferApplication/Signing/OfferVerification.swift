import Foundation
import OfferKeys
import OfferModel
import OfferSigning

/// Verification of signatures the service made (`POST /v1/offers/verify`, `offer-signer verify`): a legacy bundle or
/// a JWS checked against every key the service knows, retired ones included. Reads the keys, nothing else.
public struct OfferVerification: Sendable {
    /// The keys signatures are checked against.
    let keys: KeyRingHolder

    /// Verification with the keys `keys` holds (replaced whole when keys are reloaded).
    public init(keys: KeyRingHolder) {
        self.keys = keys
    }

    /// Verifies an offer JWS with every key the service knows.
    public func verifyJWS(_ token: String, now: Date = Date()) async -> JWSOfferVerification {
        await JWSOfferVerifier.verify(token, keyRing: keys.current, now: now)
    }

    /// Verifies a legacy bundle with every key the service knows, retired ones included.
    public func verifyLegacy(_ bundle: SignedLegacyOffer, now: Date = Date()) -> LegacyOfferVerification {
        LegacyOfferVerifier.verify(bundle, keyRing: keys.current, now: now)
    }
}
