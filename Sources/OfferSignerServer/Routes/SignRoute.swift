import Foundation
import Hummingbird
import NIOCore
import OfferApplication

/// `POST /v1/offers/sign`'s composition, written once for the router (``OfferRoutes``) and the event-loop path
/// (``EventLoopSigning``): the customer the request acts for — the credential's own, or the one the request names;
/// none: `""` — admitted by their rate limit, then the application's one step that signs at once or validates the
/// request for the pipeline (``Signing/prepareSigning(_:)``; the router's, ``Signing/prepareForPipeline(_:)``).
enum SignRoute {
    /// The step for `request`, admitting its customer at once (the event-loop path).
    static func prepare(_ request: SignOfferRequest, identity: ClientIdentity, limits: RateLimits, signing: Signing) throws -> SigningStep {
        let (acting, customer) = try actingFor(request, identity: identity)
        if let customer { try limits.admit(customer: customer, identity: identity) }
        return try signing.prepareSigning(acting)
    }

    /// The request for the pipeline, admitting its customer when the fleet's bucket grants a lease (the router).
    static func prepare(
        _ request: SignOfferRequest,
        identity: ClientIdentity,
        limits: RateLimits,
        signing: Signing
    ) async throws -> PreparedSigning {
        let (acting, customer) = try actingFor(request, identity: identity)
        if let customer { try await limits.admit(customer: customer, identity: identity) }
        return try signing.prepareForPipeline(acting)
    }

    /// The request acting for the customer the credential allows, and that customer's rate-limit key (`nil`: none).
    private static func actingFor(_ request: SignOfferRequest, identity: ClientIdentity) throws -> (SignOfferRequest, String?) {
        var acting = request
        guard let named = try identity.customer(naming: request.applicationUsername) else {
            acting.applicationUsername = ""
            return (acting, nil)
        }
        acting.applicationUsername = named
        return (acting, named.lowercased())
    }
}

extension SignAnswer {
    /// The answer as the route writes it.
    func response(from request: Request, context: some RequestContext) throws -> Response {
        switch self {
        case .legacy(let signed): try signed.response(from: request, context: context)
        case .jws(let signed): try signed.response(from: request, context: context)
        }
    }

    /// The answer's body (the event-loop path), the bytes the route writes.
    var apiJSON: ByteBuffer {
        get throws {
            switch self {
            case .legacy(let signed): signed.apiJSON
            case .jws(let signed): try JSONEncoder.api.answer(signed)
            }
        }
    }
}
