import Foundation
import Hummingbird
import OfferApplication

/// The body of `POST /v1/retention/appstore`: Apple's `RealtimeRequestBody`.
struct RealtimeRequestBody: Decodable {
    var signedPayload: String
}

extension RealtimeResponseBody: ResponseEncodable {}
extension SignedJWSOfferResponse: ResponseEncodable {}
extension IntroductoryEligibilityResponse: ResponseEncodable {}

/// The App Store's real-time retention endpoint. Open like the notification endpoint (the payload's signature
/// is the credential), rate-limited per client address, answered within the retention deadline.
struct RetentionRoutes {
    let retentionAnswers: RetentionAnswering
    let limits: RateLimits

    func register(on router: Router<OfferSignerRequestContext>) {
        router.post("/v1/retention/appstore") { request, context -> RealtimeResponseBody in
            try limits.admit(retentionAddress: context.remoteAddress?.ipAddress ?? "unknown")
            let body = try await request.decodeJSON(as: RealtimeRequestBody.self, context: context)
            guard body.signedPayload.utf8.count <= 64 * 1024 else {
                throw APIError(OfferServiceError.invalidRequest(field: "signedPayload", "signedPayload is longer than 64 KiB."))
            }
            return try await retentionAnswers.answerRetention(signedPayload: body.signedPayload)
        }
    }
}
