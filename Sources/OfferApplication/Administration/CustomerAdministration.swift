import Foundation
import Logging
import OfferEligibility
import OfferModel
import OfferSigning
import OfferStore

/// What admins do to one customer (`/admin/customers/…`): read the facts the rules see, set flags, grant an offer,
/// refresh the facts from the App Store. Every change is audited with the admin who made it (``AuditTrail``).
public struct CustomerAdministration: Sendable {
    /// The most flags a customer holds (and a request sets): flags are an admin's notes for the rules, and each
    /// change is copied into the audit.
    public static let maximumFlags = 100
    /// How many days a grant can be used when the admin does not say.
    public static let defaultGrantDays = 14
    /// The days a grant can be used for.
    public static let grantDays = 1...365

    let customers: any CustomerFactsStore
    let audit: AuditTrail
    let policies: PolicyHolder
    let appStoreRefresh: @Sendable (CustomerKey) async throws(OfferServiceError) -> CustomerFacts
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - customers: where customers' facts are kept.
    ///   - audit: where changes are audited.
    ///   - policies: the policy in force: a grant must name one of its offers (no policy: any offer).
    ///   - appStoreRefresh: asks the App Store again for a customer's subscriptions and stores the folded facts.
    ///   - now: the clock a grant's expiry counts from.
    public init(
        customers: any CustomerFactsStore,
        audit: AuditTrail,
        policies: PolicyHolder,
        appStoreRefresh: @escaping @Sendable (CustomerKey) async throws(OfferServiceError) -> CustomerFacts,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.customers = customers
        self.audit = audit
        self.policies = policies
        self.appStoreRefresh = appStoreRefresh
        self.now = now
    }

    /// The customer's facts, or `nil` when the store has never heard of them.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func facts(of key: CustomerKey) async throws(OfferServiceError) -> CustomerFacts? {
        try await storeCall { try await customers.customerFacts(for: key) }
    }

    /// Sets (a `nil` or empty value: removes) the customer's flags, and audits the change as `customer.flags`.
    /// A change that would leave the customer more than ``maximumFlags`` flags (and more than before) is refused.
    /// - Returns: the customer's facts as written.
    /// - Throws: ``OfferServiceError`` `invalid_request` (field `flags`) naming what to change, `store_unavailable`.
    public func setFlags(
        _ flags: [String: String?],
        of key: CustomerKey,
        by admin: String,
        logger: Logger
    ) async throws(OfferServiceError) -> CustomerFacts {
        guard flags.count <= Self.maximumFlags else {
            throw OfferServiceError.invalidRequest(field: "flags", "A request sets at most \(Self.maximumFlags) flags.")
        }
        for (name, value) in flags {
            do throws(OfferSigningError) {
                try PayloadField.validate(name, named: "flags", maximumLength: 64)
                if let value, !value.isEmpty { try PayloadField.validate(value, named: "flags", maximumLength: 255) }
            } catch {
                throw OfferServiceError.invalidRequest(
                    field: "flags",
                    "Flag names are 1–64 printable characters and values at most 255 (\(error.message))"
                )
            }
        }
        let facts = try await storeCall {
            try await customers.updateCustomer(key) { facts in
                let before = facts.flags.count
                for (name, value) in flags { facts.flags[name] = value }
                // Only a change that grows the flags past the bound is refused: removals always go through.
                guard facts.flags.count <= Self.maximumFlags || facts.flags.count <= before else {
                    throw OfferServiceError.invalidRequest(
                        field: "flags",
                        "A customer holds at most \(Self.maximumFlags) flags; remove some (a flag set to null is removed) before adding others."
                    )
                }
            }
        }
        try await audit.record(
            AuditEvent(at: now(), actor: admin, action: "customer.flags", target: "\(key)", details: flags.mapValues { $0 ?? "(removed)" }),
            logTarget: CustomerHash.of(key),
            logger: logger
        )
        return facts
    }

    /// Grants the customer an offer for `days` days (customer service: the rules that read grants let it through),
    /// and audits the grant as `customer.grant`.
    /// - Returns: the customer's facts as written.
    /// - Throws: ``OfferServiceError`` `invalid_request` (field `expiresInDays`), 404 `unknown_offer` when the policy
    ///   lists no such offer, `store_unavailable`; ``OfferSigningError`` `invalidField` for a malformed identifier.
    public func grant(
        productIdentifier: String,
        offerIdentifier: String,
        days: Int?,
        to key: CustomerKey,
        by admin: String,
        logger: Logger
    ) async throws -> CustomerFacts {
        let days = days ?? Self.defaultGrantDays
        guard Self.grantDays.contains(days) else {
            throw OfferServiceError.invalidRequest(field: "expiresInDays", "expiresInDays is 1 to 365.")
        }
        try PayloadField.validate(productIdentifier, named: "productIdentifier")
        try PayloadField.validate(offerIdentifier, named: "offerIdentifier")
        if let policy = policies.policy {
            guard policy.app(key.bundleIdentifier)?.product(productIdentifier)?.offer(offerIdentifier) != nil else {
                throw OfferServiceError(
                    .unknownOffer,
                    "The policy lists no offer \(offerIdentifier) of \(productIdentifier) for \(key.bundleIdentifier)."
                )
            }
        }
        let grant = CustomerServiceGrant(
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            grantedBy: admin,
            expiresAt: now().addingTimeInterval(TimeInterval(days) * 86_400)
        )
        let facts = try await storeCall { try await customers.updateCustomer(key) { $0.grants.append(grant) } }
        try await audit.record(
            AuditEvent(
                at: now(),
                actor: admin,
                action: "customer.grant",
                target: "\(key)",
                details: [
                    "grant": grant.id, "productIdentifier": grant.productIdentifier, "offerIdentifier": grant.offerIdentifier,
                    "expiresInDays": "\(days)",
                ]
            ),
            logTarget: CustomerHash.of(key),
            logger: logger
        )
        return facts
    }

    /// Asks the App Store again for the customer's subscriptions, stores what it says, and audits the refresh as
    /// `customer.refresh`.
    /// - Returns: the customer's facts after the refresh.
    /// - Throws: ``OfferServiceError`` as ``SigningPipeline/refreshFromAppStore(_:)`` does.
    public func refresh(_ key: CustomerKey, by admin: String, logger: Logger) async throws(OfferServiceError) -> CustomerFacts {
        let facts = try await appStoreRefresh(key)
        try await audit.record(
            AuditEvent(
                at: now(),
                actor: admin,
                action: "customer.refresh",
                target: "\(key)",
                details: ["subscriptions": "\(facts.subscriptions.count)"]
            ),
            logTarget: CustomerHash.of(key),
            logger: logger
        )
        return facts
    }
}
