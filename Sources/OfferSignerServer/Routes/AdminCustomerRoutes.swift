import Foundation
import Hummingbird
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSigning
import OfferStore

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
/// grants, a refresh from the App Store, the issued-signature log and the audit. Every change is audited with the admin who made it.
struct AdminCustomerRoutes {
    let service: OfferService
    let store: any OfferStore

    /// The most flags a customer holds (and a request sets): flags are an admin's notes for the rules, and each change
    /// is copied into the audit.
    static let maximumFlags = 100

    func register(on group: RouterGroup<OfferSignerRequestContext>) {
        group.get("/customers/:bundleIdentifier/:applicationUsername") { _, context -> CustomerAnswer in
            let key = try customerKey(context)
            let facts = try await storeCall { try await store.customerFacts(for: key) }
            return CustomerAnswer(known: facts != nil, facts: facts ?? CustomerFacts(key: key))
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/flags") { request, context -> CustomerAnswer in
            let key = try customerKey(context)
            let body = try await request.decodeJSON(as: FlagsRequest.self, context: context)
            guard body.flags.count <= Self.maximumFlags else {
                throw APIError.invalidRequest(field: "flags", "A request sets at most \(Self.maximumFlags) flags.")
            }
            for (name, value) in body.flags {
                do throws(OfferSigningError) {
                    try PayloadField.validate(name, named: "flags", maximumLength: 64)
                    if let value, !value.isEmpty { try PayloadField.validate(value, named: "flags", maximumLength: 255) }
                } catch {
                    throw APIError.invalidRequest(
                        field: "flags",
                        "Flag names are 1–64 printable characters and values at most 255 (\(error.message))"
                    )
                }
            }
            let facts = try await storeCall {
                try await store.updateCustomer(key) { facts in
                    let before = facts.flags.count
                    for (name, value) in body.flags { facts.flags[name] = value }
                    // Only a change that grows the flags past the bound is refused: removals always go through.
                    guard facts.flags.count <= Self.maximumFlags || facts.flags.count <= before else {
                        throw OfferServiceError.invalidRequest(
                            field: "flags",
                            "A customer holds at most \(Self.maximumFlags) flags; remove some (a flag set to null is removed) before adding others."
                        )
                    }
                }
            }
            try await audit(
                context,
                action: "customer.flags",
                target: "\(key)",
                logTarget: CustomerHash.of(key),
                details: body.flags.mapValues { $0 ?? "(removed)" }
            )
            return CustomerAnswer(known: true, facts: facts)
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/grants") { request, context -> CustomerAnswer in
            let key = try customerKey(context)
            let body = try await request.decodeJSON(as: GrantRequest.self, context: context)
            let days = body.expiresInDays ?? 14
            guard (1...365).contains(days) else { throw APIError.invalidRequest(field: "expiresInDays", "expiresInDays is 1 to 365.") }
            do throws(OfferSigningError) {
                try PayloadField.validate(body.productIdentifier, named: "productIdentifier")
                try PayloadField.validate(body.offerIdentifier, named: "offerIdentifier")
            } catch {
                throw APIError(error)
            }
            if let policy = service.policy {
                guard policy.app(key.bundleIdentifier)?.product(body.productIdentifier)?.offer(body.offerIdentifier) != nil else {
                    throw APIError(
                        .unknownOffer,
                        "The policy lists no offer \(body.offerIdentifier) of \(body.productIdentifier) for \(key.bundleIdentifier)."
                    )
                }
            }
            let admin = context.adminName ?? "unknown"
            let grant = CustomerServiceGrant(
                productIdentifier: body.productIdentifier,
                offerIdentifier: body.offerIdentifier,
                grantedBy: admin,
                expiresAt: Date().addingTimeInterval(TimeInterval(days) * 86_400)
            )
            let facts = try await storeCall { try await store.updateCustomer(key) { $0.grants.append(grant) } }
            try await audit(
                context,
                action: "customer.grant",
                target: "\(key)",
                logTarget: CustomerHash.of(key),
                details: [
                    "grant": grant.id, "productIdentifier": grant.productIdentifier, "offerIdentifier": grant.offerIdentifier,
                    "expiresInDays": "\(days)",
                ]
            )
            return CustomerAnswer(known: true, facts: facts)
        }
        group.post("/customers/:bundleIdentifier/:applicationUsername/refresh") { _, context -> CustomerAnswer in
            let key = try customerKey(context)
            let facts = try await service.refreshFromAppStore(key)
            try await audit(
                context,
                action: "customer.refresh",
                target: "\(key)",
                logTarget: CustomerHash.of(key),
                details: [
                    "subscriptions": "\(facts.subscriptions.count)"
                ]
            )
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
            return SignatureList(signatures: try await storeCall { try await store.issuedSignatures(matching: query) })
        }
        group.get("/audit") { request, _ -> AuditList in
            var limit = 100
            if let text = request.uri.queryParameters["limit"] {
                guard let number = Int(String(text)), (1...10_000).contains(number) else {
                    throw APIError.invalidRequest(field: "limit", "limit is a whole number from 1 to 10000.")
                }
                limit = number
            }
            return AuditList(events: try await storeCall { try await store.auditEvents(limit: limit, since: nil) })
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
            service: service
        )
    }

    /// The customer of an app and an identifier, validated as every customer route (and the console's customer page)
    /// validates them: exactly as given — nothing trimmed, so ` a` is not `a` — each a valid payload field, the
    /// identifier as ``PayloadField/validateApplicationUsername(_:named:)`` says.
    /// - Throws: ``APIError`` 400 `invalid_request` naming the field, or 404 `unknown_app` for an app this service
    ///   does not serve.
    static func customerKey(bundleIdentifier bundle: String, applicationUsername username: String, service: OfferService) throws -> CustomerKey {
        do throws(OfferSigningError) {
            try PayloadField.validate(bundle, named: "bundleIdentifier", maximumLength: PayloadField.maximumBundleIdentifierLength)
            try PayloadField.validateApplicationUsername(username)
        } catch {
            throw APIError(error)
        }
        _ = try service.app(named: bundle)  // 404 unknown_app: a customer of an app this service does not serve
        return CustomerKey(bundleIdentifier: bundle, applicationUsername: username)
    }

    private func audit(
        _ context: OfferSignerRequestContext,
        action: String,
        target: String,
        logTarget: String,
        details: [String: String]
    ) async throws {
        let event = AuditEvent(actor: context.adminName ?? "unknown", action: action, target: target, details: details)
        try await storeCall { try await store.appendAudit(event) }
        // The audit row keeps the customer (admins query it); the log line has its hash (docs/observability.md).
        context.logger.notice("audit: \(action)", metadata: ["admin": "\(event.actor)", "target": "\(logTarget)"])
    }
}
