import Foundation
import Hummingbird
import OfferApplication
import OfferModel
import OfferSignerServer
import OfferSigning

/// The body of `POST /demo/notifications` (demo only).
struct DemoNotificationRequest: Decodable {
    var applicationUsername: String
    var event: String
}

/// The body of `POST /demo/retention` (demo only).
struct DemoRetentionRequest: Decodable {
    var applicationUsername: String
}

/// What the demo's App Store signed: the body to POST to the App Store endpoint.
struct DemoSignedPayload: ResponseEncodable {
    var signedPayload: String
}

/// `serve --demo` only: the demo's stand-in for the App Store signs a notification or a retention request for a
/// demo customer; the caller POSTs it to the real endpoint, which verifies it like Apple's.
struct DemoRoutes {
    /// The customers' facts the demo's App Store signs from; `nil` without a store.
    let customers: CustomerView?
    let appStore: DemoAppStore

    func register(on router: Router<OfferSignerRequestContext>) {
        router.post("/demo/notifications") { request, context -> DemoSignedPayload in
            let body = try await request.decodeJSON(as: DemoNotificationRequest.self, context: context)
            guard let event = Demo.Event(rawValue: body.event) else {
                throw APIError.invalidRequest(field: "event", "event must be one of \(Demo.Event.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            let key = try customer(body.applicationUsername)
            let payload = try await Demo.notification(
                event,
                for: key.applicationUsername,
                known: try await facts(key),
                at: Date(),
                appStore: appStore
            )
            return DemoSignedPayload(signedPayload: payload)
        }
        router.post("/demo/retention") { request, context -> DemoSignedPayload in
            let body = try await request.decodeJSON(as: DemoRetentionRequest.self, context: context)
            let key = try customer(body.applicationUsername)
            return DemoSignedPayload(
                signedPayload: try await Demo.retentionRequest(for: key.applicationUsername, known: try await facts(key), appStore: appStore)
            )
        }
    }

    private func customer(_ applicationUsername: String) throws -> CustomerKey {
        try CustomerIdentifier.validate(applicationUsername)
        guard !applicationUsername.isEmpty else {
            throw APIError.invalidRequest(
                field: "applicationUsername",
                "applicationUsername is required: one of the demo's customers (lapsed-user, leaving-user, loyal-user, new-user) or any name."
            )
        }
        return CustomerKey(bundleIdentifier: Demo.bundleIdentifier, applicationUsername: applicationUsername)
    }

    private func facts(_ key: CustomerKey) async throws -> CustomerFacts? {
        guard let customers else { throw OfferServiceError.storeUnavailable }
        return try await customers.facts(of: key)
    }
}
