import Foundation
import OfferModel
import OfferStore

/// One customer as the console's Customer page shows them: who holds an original transaction, their facts, the
/// signatures issued to them, the decisions the log kept about them (with their reasons) and what became of their
/// offers. Read only; the changes go through ``CustomerAdministration``.
public struct CustomerView: Sendable {
    let customers: any CustomerFactsStore
    let signatures: any IssuedSignatureLog
    let decisionLog: any PolicyDecisionLog
    let outcomeLog: any OutcomeLog
    let now: @Sendable () -> Date

    /// How far back ``decisions(of:)`` reads the decision log (it has no index on the customer: the window bounds
    /// the read).
    public static let decisionWindowDays = 90
    /// The most rows of each list.
    public static let limit = 100

    /// - Parameters:
    ///   - customers: the customers' facts.
    ///   - signatures: the issued-signature log.
    ///   - decisions: the decision log.
    ///   - outcomes: the redemptions and retention answers.
    ///   - now: the clock the decision window counts back from.
    public init(
        customers: any CustomerFactsStore,
        signatures: any IssuedSignatureLog,
        decisions: any PolicyDecisionLog,
        outcomes: any OutcomeLog,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.customers = customers
        self.signatures = signatures
        self.decisionLog = decisions
        self.outcomeLog = outcomes
        self.now = now
    }

    /// The customers whose subscriptions have this original transaction (1 to 32 digits).
    /// - Throws: ``OfferServiceError`` `invalid_request` (`originalTransactionId`) for anything else, `store_unavailable`.
    public func customers(withOriginalTransactionId originalTransactionId: String) async throws(OfferServiceError) -> [CustomerKey] {
        guard (1...32).contains(originalTransactionId.utf8.count), originalTransactionId.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw OfferServiceError.invalidRequest(field: "originalTransactionId", "originalTransactionId is 1 to 32 digits.")
        }
        return try await storeCall { try await customers.customers(withOriginalTransactionId: originalTransactionId) }
    }

    /// The customer's facts; `nil` when the store has not heard of them.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func facts(of key: CustomerKey) async throws(OfferServiceError) -> CustomerFacts? {
        try await storeCall { try await customers.customerFacts(for: key) }
    }

    /// The newest ``limit`` signatures issued to the customer.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func issuedSignatures(of key: CustomerKey) async throws(OfferServiceError) -> [IssuedSignature] {
        let query = IssuedSignatureQuery(bundleIdentifier: key.bundleIdentifier, applicationUsername: key.applicationUsername, limit: Self.limit)
        return try await storeCall { try await signatures.issuedSignatures(matching: query) }
    }

    /// The newest ``limit`` decisions the log kept about the customer in the last ``decisionWindowDays`` days, after
    /// the decisions still queued are written: looked up by the log's keyed hash of the customer, computed as the
    /// service computes it.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func decisions(of key: CustomerKey) async throws(OfferServiceError) -> [PolicyDecisionRecord] {
        await decisionLog.flushDecisionLog()
        let since = Int64((now().timeIntervalSince1970 - Double(Self.decisionWindowDays) * 86_400) * 1000)
        let hash = CustomerHash.of(key.applicationUsername)
        return try await storeCall {
            try await decisionLog.customerDecisions(bundleIdentifier: key.bundleIdentifier, customerHash: hash, since: since, limit: Self.limit)
        }
    }

    /// The redemptions of the customer or of these original transactions, and the retention answers given about
    /// them, newest ``limit`` of each.
    /// - Throws: ``OfferServiceError`` `store_unavailable`.
    public func outcomes(of key: CustomerKey, originalTransactionIds: [String]) async throws(OfferServiceError) -> CustomerOutcomes {
        try await storeCall { try await outcomeLog.customerOutcomes(key, originalTransactionIds: originalTransactionIds, limit: Self.limit) }
    }

    /// Writes the decisions still queued (the demo, once its history is seeded, so that the console shows them).
    public func flushDecisionLog() async {
        await decisionLog.flushDecisionLog()
    }
}
