import Crypto
import Foundation
import JWTKit

/// A signed StoreKit 2 JWS with what it says, as `POST /v1/offers/sign` (format `jws`) and
/// `POST /v1/offers/introductory-eligibility` return it.
public struct SignedJWS<Claims: JWTPayload & Equatable>: Sendable {
    /// The compact JWS.
    public var token: String
    /// The key that signed it.
    public var keyIdentifier: String
    /// The claims it carries.
    public var claims: Claims
}

/// Signs the StoreKit 2 JWS signatures with jwt-kit and self-verifies each before returning it.
///
/// ## Usage
///
/// ```swift
/// let signed = try await JWSOfferSigner.signPromotionalOffer(
///     bundleIdentifier: "com.example.app", productIdentifier: "com.example.monthly",
///     offerIdentifier: "winback_50", transactionId: "2000000123456789",
///     issuerIdentifier: issuerID, key: key)
/// // signed.token → Product.PurchaseOption.promotionalOffer(_:compactJWS:)
/// ```
///
/// Header `{"alg":"ES256","kid":<keyIdentifier>,"typ":"JWT"}`, no `x5c`, no `exp`; the signature is raw
/// r‖s, base64url (jwt-kit).
public enum JWSOfferSigner {
    /// Signs a promotional offer V2 JWS.
    /// - Throws: ``OfferSigningError`` `invalidField` for a field that cannot be signed, `selfCheckFailed` when
    ///   the token does not verify with the key's public key.
    public static func signPromotionalOffer(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        transactionId: String?,
        issuerIdentifier: String,
        key: SigningKey,
        nonce: UUID = .randomVersion4(),
        issuedAt: Date = Date()
    ) async throws(OfferSigningError) -> SignedJWS<PromotionalOfferV2Claims> {
        try PayloadField.validate(bundleIdentifier, named: "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
        try PayloadField.validate(productIdentifier, named: "productIdentifier")
        try PayloadField.validate(offerIdentifier, named: "offerIdentifier")
        if let transactionId { try validateTransactionIdentifier(transactionId) }
        try PayloadField.validate(issuerIdentifier, named: "issuerIdentifier")
        let claims = PromotionalOfferV2Claims(
            iss: issuerIdentifier,
            bid: bundleIdentifier,
            iat: Int64(issuedAt.timeIntervalSince1970.rounded(.down)),
            nonce: nonce.uuidString.lowercased(),
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            transactionId: transactionId
        )
        return try await sign(claims, with: key, selfCheckKey: key.publicKey)
    }

    /// Signs an introductory-offer eligibility JWS.
    /// - Throws: ``OfferSigningError`` as
    ///   ``signPromotionalOffer(bundleIdentifier:productIdentifier:offerIdentifier:transactionId:issuerIdentifier:key:nonce:issuedAt:)``.
    public static func signIntroductoryOfferEligibility(
        bundleIdentifier: String,
        productIdentifier: String,
        allowIntroductoryOffer: Bool,
        transactionId: String,
        issuerIdentifier: String,
        key: SigningKey,
        nonce: UUID = .randomVersion4(),
        issuedAt: Date = Date()
    ) async throws(OfferSigningError) -> SignedJWS<IntroductoryOfferEligibilityClaims> {
        try PayloadField.validate(bundleIdentifier, named: "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
        try PayloadField.validate(productIdentifier, named: "productIdentifier")
        try validateTransactionIdentifier(transactionId)
        try PayloadField.validate(issuerIdentifier, named: "issuerIdentifier")
        let claims = IntroductoryOfferEligibilityClaims(
            iss: issuerIdentifier,
            bid: bundleIdentifier,
            iat: Int64(issuedAt.timeIntervalSince1970.rounded(.down)),
            nonce: nonce.uuidString.lowercased(),
            productIdentifier: productIdentifier,
            allowIntroductoryOffer: allowIntroductoryOffer,
            transactionId: transactionId
        )
        return try await sign(claims, with: key, selfCheckKey: key.publicKey)
    }

    /// Transaction identifiers are decimal digits (App Store transaction and app-transaction IDs), 1–64.
    package static func validateTransactionIdentifier(_ value: String) throws(OfferSigningError) {
        try PayloadField.validate(value, named: "transactionId", maximumLength: 64)
        guard value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .invalidField("transactionId", "transactionId must be an App Store transaction identifier (decimal digits).")
        }
    }

    static func sign<Claims: JWTPayload & Equatable>(
        _ claims: Claims,
        with key: SigningKey,
        selfCheckKey: P256.Signing.PublicKey
    ) async throws(OfferSigningError) -> SignedJWS<Claims> {
        let token: String
        do {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: try ES256PrivateKey(backing: key.privateKey), kid: JWKIdentifier(string: key.keyIdentifier))
            token = try await keys.sign(
                claims,
                kid: JWKIdentifier(string: key.keyIdentifier),
                header: ["typ": "JWT", "kid": .string(key.keyIdentifier)]
            )
        } catch {
            throw OfferSigningError(.selfCheckFailed, "Signing a JWS with key \(key.keyIdentifier) failed.")
        }
        // Self-check with the public key only: signature, then the claims as written.
        do {
            let verifier = JWTKeyCollection()
            await verifier.add(ecdsa: try ES256PublicKey(backing: selfCheckKey), kid: JWKIdentifier(string: key.keyIdentifier))
            let decoded = try await verifier.verify(token, as: Claims.self)
            guard decoded == claims else { throw OfferSigningError(.selfCheckFailed, "") }
        } catch {
            throw OfferSigningError(
                .selfCheckFailed,
                "The JWS made with key \(key.keyIdentifier) did not verify with its public key; it was not returned."
            )
        }
        return SignedJWS(token: token, keyIdentifier: key.keyIdentifier, claims: claims)
    }
}
