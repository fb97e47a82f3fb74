import AppStoreNotifications
import Foundation
import Logging
import Metrics
import OfferModel
import OfferSigning
import OfferStore

/// Who an App Store transaction belongs to, moving no customer it cannot prove.
///
/// A signed transaction proves a purchase, not whose account it is for: a modified app can set any
/// `appAccountToken` at purchase, and the App Store then sends genuine notifications carrying it. So the first
/// binding wins, both ways:
/// - an original transaction already filed under a customer known by an account (not `otid:`) stays with that
///   customer, whatever token a later payload carries;
/// - a token whose customer already holds another original transaction of the same subscription group is not
///   re-pointed to this one; the new transaction is kept under its own key (`otid:<originalTransactionId>`).
///
/// Each refusal is a ``Conflict``: audited, counted (`offer_signer_customer_binding_conflicts_total`) and logged
/// with hashed customers. Notifications and signed transactions an app presents follow this one rule.
package struct CustomerBinding: Sendable {
    /// Why a payload's token was not followed.
    enum Conflict: String, Sendable {
        /// The original transaction is already bound to another customer.
        case transactionClaimed = "transaction_claimed"
        /// The token's customer already holds another original transaction of this subscription group.
        case tokenBoundElsewhere = "token_bound_elsewhere"
    }

    /// The customer to file the transaction under.
    var key: CustomerKey
    /// The customer the payload's token (or the caller) named, when the rule did not follow it.
    var refused: CustomerKey?
    var conflict: Conflict?

    /// The prefix of the internal keys of subscriptions no account has claimed (`otid:<originalTransactionId>`);
    /// no customer identifier from outside may start with it.
    static let internalPrefix = "otid:"

    /// The internal key of an original transaction no account has claimed.
    static func unclaimed(_ originalTransactionId: String, bundleIdentifier: String) -> CustomerKey {
        CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: internalPrefix + originalTransactionId)
    }

    /// Whether a customer is one of the internal `otid:` keys.
    static func isUnclaimed(_ key: CustomerKey) -> Bool { key.applicationUsername.hasPrefix(internalPrefix) }

    /// Which `appAccountToken`s name a customer.
    package enum TokenRule: Sendable {
        /// Apple's type: a UUID (what the App Store sends).
        case uuid
        /// Any valid customer identifier: the demo's stand-in App Store, which names its customers readably.
        case customerIdentifier
    }

    /// The transaction's `appAccountToken`, lower-cased, when it can name a customer: a UUID, Apple's type (or, for
    /// the demo's stand-in App Store, any valid customer identifier), that is also a valid customer identifier
    /// (``CustomerIdentifier``). An empty, malformed or hostile token (a 28,000-character string, a NUL, `OTID:…`)
    /// names no one: the transaction is filed by its original transaction instead.
    static func token(of transaction: JWSTransactionDecodedPayload, rule: TokenRule = .uuid) -> String? {
        guard let token = transaction.appAccountToken, !token.isEmpty else { return nil }
        if rule == .uuid, token.utf8.count != 36 || UUID(uuidString: token) == nil { return nil }
        guard (try? CustomerIdentifier.validate(token, named: "appAccountToken")) != nil else { return nil }
        return token.lowercased()
    }

    /// Where `transaction` belongs. `claimant`: the customer an app presented it for (the signed-transaction path),
    /// who must be the one the rule gives. `nil` when nothing names a customer (no usable token, no original
    /// transaction): such a transaction is filed under no one, never under a shared customer.
    static func resolve(
        _ transaction: JWSTransactionDecodedPayload,
        bundleIdentifier: String,
        store: any CustomerFactsStore & AuditLog,
        claimant: CustomerKey? = nil,
        tokens rule: TokenRule = .uuid
    ) async throws -> CustomerBinding? {
        let token = token(of: transaction, rule: rule)
        let original = transaction.originalTransactionId
        let named = claimant ?? token.map({ CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: $0) })
        // The holders of the original transaction and, when a customer is named, their facts (a subscription held in
        // the group under another original transaction refuses the binding): read together, one round trip.
        let (held, candidateFacts) = try await store.bindingRead(originalTransactionId: original, candidate: named)
        let owners = held.filter { $0.bundleIdentifier == bundleIdentifier }
        let accountOwners = owners.filter { !isUnclaimed($0) }
        let fallback = accountOwners.first ?? owners.first ?? original.map { unclaimed($0, bundleIdentifier: bundleIdentifier) }
        guard let candidate = named else {
            return fallback.map { CustomerBinding(key: $0) }
        }
        // Without a token, nothing in the transaction names a customer: an `otid:` owner (the App Store's
        // notifications came first) blocks a claimant as well.
        let blocking = token == nil ? owners : accountOwners
        if !blocking.isEmpty, !blocking.contains(candidate) {
            return CustomerBinding(key: fallback ?? blocking[0], refused: candidate, conflict: .transactionClaimed)
        }
        if let original, let group = transaction.subscriptionGroupIdentifier, !accountOwners.contains(candidate),
            let other = candidateFacts?.subscription(inGroup: group)?.originalTransactionId, other != original
        {
            return CustomerBinding(
                key: fallback ?? unclaimed(original, bundleIdentifier: bundleIdentifier),
                refused: candidate,
                conflict: .tokenBoundElsewhere
            )
        }
        return CustomerBinding(key: candidate)
    }

    /// The claims a write filing `transactions` under `key` makes (``TransactionClaim``): one per original
    /// transaction, in the transaction's App Store environment. A transaction whose own `appAccountToken` names
    /// `key` may take its subscription from the internal `otid:` key it was filed under before any account claimed
    /// it; nothing else moves an owner.
    static func claims(
        _ transactions: [JWSTransactionDecodedPayload],
        for key: CustomerKey,
        environment: String? = nil,
        tokens rule: TokenRule = .uuid
    ) -> [TransactionClaim] {
        var claims: [TransactionClaim] = []
        for transaction in transactions {
            guard let original = transaction.originalTransactionId else { continue }
            let named = !isUnclaimed(key) && token(of: transaction, rule: rule) == key.applicationUsername
            claims.append(
                TransactionClaim(
                    environment: transaction.environment?.rawValue ?? environment ?? "",
                    originalTransactionId: original,
                    replacing: named ? internalPrefix + original : nil
                )
            )
        }
        return claims
    }

    /// Audits, counts and logs a conflict (nothing when there is none). `source`: `notification`,
    /// `signed_transaction` or `app_store_answer`.
    func report(source: String, store: any CustomerFactsStore & AuditLog, logger: Logger) async throws {
        guard let conflict, let refused else { return }
        Counter(label: "offer_signer_customer_binding_conflicts_total", dimensions: [("source", source), ("conflict", conflict.rawValue)]).increment()
        logger.warning(
            "an App Store transaction names a customer it is not bound to; the customer was not moved",
            metadata: [
                "source": "\(source)", "conflict": "\(conflict.rawValue)", "customer": "\(CustomerHash.of(refused))",
                "filedUnder": "\(CustomerHash.of(key))",
            ]
        )
        try await store.appendAudit(
            AuditEvent(
                actor: "app-store",
                action: "customer.binding_conflict",
                target: refused.description,
                details: ["source": source, "conflict": conflict.rawValue, "filedUnder": key.description]
            )
        )
    }
}

/// Customer identifiers from outside (`applicationUsername`, a login JWT's customer claim, the admin API): what
/// ``PayloadField/validateApplicationUsername(_:named:)`` allows, and never the prefix of an internal key.
package enum CustomerIdentifier {
    package static func validate(_ value: String, named field: String = "applicationUsername") throws(OfferSigningError) {
        try PayloadField.validateApplicationUsername(value, named: field)
        try refuseInternal(value, named: field)
    }

    /// Refuses an identifier that starts with the prefix of internal keys (`otid:`, in any case).
    package static func refuseInternal(_ value: String, named field: String = "applicationUsername") throws(OfferSigningError) {
        if value.lowercased().hasPrefix(CustomerBinding.internalPrefix) {
            throw .invalidField(
                field,
                """
                \(field) starts with \(CustomerBinding.internalPrefix), which this service reserves for subscriptions no account has claimed; \
                use the customer's account identifier or appAccountToken.
                """
            )
        }
    }
}
