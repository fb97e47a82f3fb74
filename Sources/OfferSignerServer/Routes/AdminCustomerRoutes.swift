import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSigning

struct CustomerAnswer: ResponseEncodable {
    /// Whether the store has heard of the customer.
    var known: Bool
    var facts: CustomerFacts
}

struct FlagsRequest: Decodable {
    /// Flags to set; a `null` value removes the flag.
    var flags: [String: String?]
}

struct GrantRequest: Decodable {
    var productIdentifier: String
    var offerIdentifier: String
    /// How long the grant can be used (default 14 days, at most 365).
    var expiresInDays: Int?
}

struct SignatureList: ResponseEncodable {
    var signatures: [IssuedSignature]
}

struct AuditList: ResponseEncodable {
    var events: [AuditEvent]
}

/// `/admin/customers/…`, `/admin/signatures`, `/admin/audit`: what the rules see, flags, customer-service
/// grants, a refresh from the App Store, the issued-signature log and the audit. Every change is audited with the admin who made it
/// (``CustomerAdministration``); the routes decode, call the use case and encode.
struct AdminCustomerRoutes {
    let signing: Signing
    let customers: CustomerAdministration
    let logs: AdministrationLogs

    /// The most flags a customer holds (and a request sets) (``CustomerAdministration/maximumFlags``).
    static let maximumFlags = CustomerAdministration.maximumFlags

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/customers/:bundleIdentifier/:applicationUsername") { _, context -> CustomerAnswer in
            let key = try customerKey(context)
            let facts = try await customers.facts(of: key)
            return CustomerAnswer(known: facts != nil, facts: facts ?? CustomerFacts(key: key))
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/flags") { request, context -> CustomerAnswer in
            let key = try customerKey(context)
            let body = try await request.decodeJSON(as: FlagsRequest.self, context: context)
            let facts = try await customers.setFlags(body.flags, of: key, by: context.adminName ?? "unknown", logger: context.logger)
            return CustomerAnswer(known: true, facts: facts)
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/grants") { request, context -> CustomerAnswer in
            let key = try customerKey(context)
            let body = try await request.decodeJSON(as: GrantRequest.self, context: context)
            let facts = try await customers.grant(
                productIdentifier: body.productIdentifier,
                offerIdentifier: body.offerIdentifier,
                days: body.expiresInDays,
                to: key,
                by: context.adminName ?? "unknown",
                logger: context.logger
            )
            return CustomerAnswer(known: true, facts: facts)
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/refresh") { _, context -> CustomerAnswer in
            let key = try customerKey(context)
            let facts = try await customers.refresh(key, by: context.adminName ?? "unknown", logger: context.logger)
            return CustomerAnswer(known: true, facts: facts)
        }
        group.get("/signatures") { request, _ -> SignatureList in
            let parameters = request.uri.queryParameters
            func text(_ name: String) -> String? { parameters[name[...]].map(String.init) }
            func number(_ name: String) throws -> Int64? {
                guard let value = text(name) else { return nil }
                guard let number = Int64(value) else {
                    throw APIError.invalidRequest(field: name, "\(name) must be an integer (Unix milliseconds, or a count for limit).")
                }
                return number
            }
            let limit = Int(try number("limit") ?? 100)
            guard (1...10_000).contains(limit) else { throw APIError.invalidRequest(field: "limit", "limit is 1 to 10000.") }
            let query = IssuedSignatureQuery(
                bundleIdentifier: text("bundleIdentifier"),
                applicationUsername: text("applicationUsername"),
                productIdentifier: text("productIdentifier"),
                offerIdentifier: text("offerIdentifier"),
                keyIdentifier: text("keyIdentifier"),
                since: try number("since"),
                until: try number("until"),
                limit: limit
            )
            return SignatureList(signatures: try await logs.issuedSignatures(matching: query))
        }
        group.get("/audit") { request, _ -> AuditList in
            var limit = 100
            if let text = request.uri.queryParameters["limit"] {
                guard let number = Int(String(text)), (1...10_000).contains(number) else {
                    throw APIError.invalidRequest(field: "limit", "limit is a whole number from 1 to 10000.")
                }
                limit = number
            }
            return AuditList(events: try await logs.auditEvents(limit: limit))
        }
    }

    /// The customer of the path, percent-decoded (`%C3%84bc` is `Äbc`, stored as `äbc`) and validated like a
    /// request field, of an app this service serves.
    private func customerKey(_ context: OfferSignerRequestContext) throws -> CustomerKey {
        func decoded(_ name: String) throws -> String {
            let raw = try context.parameters.require(name)
            guard let value = raw.removingPercentEncoding else {
                throw APIError.invalidRequest(
                    field: name,
                    "\(name) in the path is not valid percent-encoding; encode it as UTF-8 (for example %C3%84 for Ä)."
                )
            }
            return value
        }
        return try Self.customerKey(
            bundleIdentifier: try decoded("bundleIdentifier"),
            applicationUsername: try decoded("applicationUsername"),
            signing: signing
        )
    }

    /// The customer of an app and an identifier, validated as every customer route (and the console's customer page)
    /// validates them: exactly as given — nothing trimmed, so ` a` is not `a` — each a valid payload field, the
    /// identifier as ``PayloadField/validateApplicationUsername(_:named:)`` says.
    /// - Throws: ``APIError`` 400 `invalid_request` naming the field, or 404 `unknown_app` for an app this service
    ///   does not serve.
    static func customerKey(bundleIdentifier bundle: String, applicationUsername username: String, signing: Signing) throws -> CustomerKey {
        do throws(OfferSigningError) {
            try PayloadField.validate(bundle, named: "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
            try PayloadField.validateApplicationUsername(username)
        } catch {
            throw APIError(error)
        }
        _ = try signing.app(named: bundle)  // 404 unknown_app: a customer of an app this service does not serve
        return CustomerKey(bundleIdentifier: bundle, applicationUsername: username)
    }

}
