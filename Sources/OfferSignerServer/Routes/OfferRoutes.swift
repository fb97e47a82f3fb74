import Foundation
import Hummingbird
import OfferApplication
import OfferEligibility
import OfferSigning

/// The body of `POST /v1/offers/verify`: a legacy bundle, `{"signature": <compact JWS>}`, or either answer of
/// `POST /v1/offers/sign` exactly as it came (its `format` says which).
struct VerifyRequest: Decodable {
    /// `legacy` or `jws`, as the sign answer carries it; absent: told from the fields.
    var format: String?
    var bundleIdentifier: String?
    var productIdentifier: String?
    var offerIdentifier: String?
    var applicationUsername: String?
    var keyIdentifier: String?
    var nonce: String?
    var timestamp: Int64?
    var signature: String?

    /// A JWS to verify rather than a legacy bundle: a JWS sign answer as returned (`"format": "jws"`), or
    /// `{"signature": <compact JWS>}` without a legacy bundle's keyIdentifier, nonce and timestamp.
    var isJWS: Bool {
        if format == "jws" { return true }
        return format == nil && keyIdentifier == nil && nonce == nil && timestamp == nil && (signature?.contains(".") ?? false)
    }

    /// The legacy bundle, or a 400 naming the first missing field.
    func legacyBundle(defaultBundleIdentifier: String?) throws(APIError) -> SignedLegacyOffer {
        if let format, format != "legacy" {
            throw APIError.invalidRequest(
                field: "format",
                "format must be \"legacy\" or \"jws\" (what POST /v1/offers/sign answered), not \"\(format.prefix(20))\"."
            )
        }
        // A lone signature that is not a compact JWS: say what it is not, rather than which bundle field is missing.
        if let signature, keyIdentifier == nil, nonce == nil, timestamp == nil, productIdentifier == nil {
            throw APIError.invalidRequest(
                field: "signature",
                """
                signature \(signature.isEmpty ? "is empty" : "is not a compact JWS (three base64url parts separated by dots)"); to verify a \
                legacy bundle, send all its fields: bundleIdentifier, productIdentifier, offerIdentifier, applicationUsername, keyIdentifier, \
                nonce, timestamp and signature.
                """
            )
        }
        func require<T>(_ value: T?, _ field: String) throws(APIError) -> T {
            guard let value else { throw APIError.invalidRequest(field: field, "\(field) is required to verify a legacy bundle.") }
            return value
        }
        let timestamp = try require(timestamp, "timestamp")
        guard OfferTimestamp.millisecondRange.contains(timestamp) else {
            throw APIError.invalidRequest(field: "timestamp", "timestamp must be Unix time in milliseconds, from 0 to 253402300799999 (year 9999).")
        }
        return SignedLegacyOffer(
            bundleIdentifier: try require(bundleIdentifier ?? defaultBundleIdentifier, "bundleIdentifier"),
            productIdentifier: try require(productIdentifier, "productIdentifier"),
            offerIdentifier: try require(offerIdentifier, "offerIdentifier"),
            applicationUsername: try require(applicationUsername, "applicationUsername"),
            keyIdentifier: try require(keyIdentifier, "keyIdentifier"),
            nonce: try require(nonce, "nonce"),
            timestamp: timestamp,
            signature: try require(signature, "signature")
        )
    }
}

/// `POST /v1/offers/verify` answer: what the verifier found (``LegacyOfferVerification`` or
/// ``JWSOfferVerification``), with `format` beside its fields.
struct VerifyResponse<Verification: Encodable & Sendable>: ResponseEncodable {
    var format: String
    var verification: Verification

    private enum CodingKeys: String, CodingKey { case format }

    func encode(to encoder: any Encoder) throws {
        try verification.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(format, forKey: .format)
    }
}

/// The body of `POST /v1/notifications/appstore` (App Store Server Notifications V2).
struct NotificationRequest: Decodable {
    var signedPayload: String
}

struct NotificationResponse: ResponseEncodable {
    var outcome: IngestOutcome
}

/// The body of `POST /v1/offers/eligibility`.
struct EligibilityRequest: Decodable {
    var bundleIdentifier: String?
    /// May be left out when a login JWT names the customer.
    var applicationUsername: String
    var productIdentifier: String?
    /// A transaction of the customer's: when the store knows no subscription of theirs, the App Store is asked.
    var transactionId: String?

    private enum CodingKeys: String, CodingKey { case bundleIdentifier, applicationUsername, productIdentifier, transactionId }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        bundleIdentifier = try container.decodeIfPresent(String.self, forKey: .bundleIdentifier)
        applicationUsername = try container.decodeIfPresent(String.self, forKey: .applicationUsername) ?? ""
        productIdentifier = try container.decodeIfPresent(String.self, forKey: .productIdentifier)
        transactionId = try container.decodeIfPresent(String.self, forKey: .transactionId)
    }
}

/// Its answer: every offer of the policy (of the product, if given) with its decision.
struct EligibilityResponse: ResponseEncodable {
    var applicationUsername: String
    /// `false` when no policy is configured: every offer is signed, and none is listed.
    var policyInForce: Bool
    var offers: [OfferEligibilityEntry]
}

/// The app-facing routes (`/v1/offers/*`, behind the client credential): sign, eligibility, introductory
/// eligibility, verify. Each names its customer through ``customer(_:_:)``: a login JWT's own customer, or
/// the one the request names, then the per-customer rate limit.
struct OfferRoutes {
    let signing: Signing
    let verification: OfferVerification
    let limits: RateLimits

    /// The customer the request acts for, checked against the credential and admitted by the rate limit.
    private func customer(_ requested: String, _ context: OfferSignerRequestContext) async throws -> String {
        let identity = context.identity ?? .open
        guard let customer = try identity.customer(naming: requested) else { return "" }
        try await limits.admit(customer: customer.lowercased(), identity: identity)
        return customer
    }

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.post("/sign") { request, context -> Response in
            let body = try await request.decodeJSON(as: SignOfferRequest.self, context: context)
            let prepared = try await SignRoute.prepare(body, identity: context.identity ?? .open, limits: limits, signing: signing)
            return try await signing.sign(prepared).response(from: request, context: context)
        }
        group.post("/eligibility") { request, context -> EligibilityResponse in
            var body = try await request.decodeJSON(as: EligibilityRequest.self, context: context)
            body.applicationUsername = try await customer(body.applicationUsername, context)
            let offers = try await signing.eligibility(
                bundleIdentifier: body.bundleIdentifier,
                applicationUsername: body.applicationUsername,
                productIdentifier: body.productIdentifier,
                transactionId: body.transactionId
            )
            return EligibilityResponse(
                applicationUsername: body.applicationUsername.lowercased(),
                policyInForce: signing.policy != nil,
                offers: offers
            )
        }
        group.post("/introductory-eligibility") { request, context -> IntroductoryEligibilityResponse in
            var body = try await request.decodeJSON(as: IntroductoryEligibilityRequest.self, context: context)
            body.applicationUsername = try await customer(body.applicationUsername, context)
            return try await signing.signIntroductoryOfferEligibility(body)
        }
        group.post("/verify") { request, context -> Response in
            let body = try await request.decodeJSON(as: VerifyRequest.self, context: context)
            if body.isJWS, let token = body.signature {
                return try VerifyResponse(format: "jws", verification: await verification.verifyJWS(token)).response(from: request, context: context)
            }
            let only = signing.apps.count == 1 ? signing.apps.keys.first : nil
            let bundle = try body.legacyBundle(defaultBundleIdentifier: only)
            return try VerifyResponse(format: "legacy", verification: verification.verifyLegacy(bundle)).response(from: request, context: context)
        }
    }
}

/// The App Store's endpoint: Server Notifications V2. Open (the payload's signature is the credential),
/// rate-limited per client address.
struct AppStoreRoutes {
    /// `nil`: the service takes no notifications (no store, or no app it can verify them for).
    let notifications: NotificationIngestion?
    let limits: RateLimits

    func register(on router: Router<OfferSignerRequestContext>) {
        router.post("/v1/notifications/appstore") { request, context -> NotificationResponse in
            try limits.admit(appStoreAddress: context.remoteAddress?.ipAddress ?? "unknown")
            let body = try await request.decodeJSON(as: NotificationRequest.self, context: context)
            guard let notifications else {
                throw APIError(
                    .storeUnavailable,
                    """
                    App Store notifications are not accepted: the service has no customer store or no app it can verify notifications for \
                    (appAppleId is needed for Production).
                    """,
                    headers: [.retryAfter: "3600"]
                )
            }
            return NotificationResponse(outcome: try await notifications.receive(signedPayload: body.signedPayload))
        }
    }
}
