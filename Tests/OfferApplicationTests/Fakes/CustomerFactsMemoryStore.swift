import OfferModel
import OfferStore
import Synchronization

/// Customers' facts in memory: a fake of the ``CustomerFactsStore`` capability (not of a database; the SQL stores'
/// behaviour is tested in OfferStoreTests). Each update runs under one lock, so none is lost; `failing` makes every
/// call throw as an unreachable store would.
final class CustomerFactsMemoryStore: CustomerFactsStore {
    struct Unreachable: Error {}

    private let state = Mutex<(facts: [CustomerKey: CustomerFacts], owners: [String: CustomerKey])>(([:], [:]))
    private let failure = Mutex(false)

    /// Makes every later call throw (`true`) or work again (`false`).
    func failing(_ fails: Bool) { failure.withLock { $0 = fails } }

    /// Puts a customer's facts in the store as they are.
    func seed(_ facts: CustomerFacts) { state.withLock { $0.facts[facts.key] = facts } }

    private func check() throws {
        if failure.withLock({ $0 }) { throw Unreachable() }
    }

    func customerFacts(for key: CustomerKey) async throws -> CustomerFacts? {
        try check()
        return state.withLock { $0.facts[key] }
    }

    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey] {
        try check()
        return state.withLock { state in
            state.facts.values.filter { facts in facts.subscriptions.contains { $0.originalTransactionId == originalTransactionId } }.map(\.key)
        }
    }

    @discardableResult
    func updateCustomer(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts {
        try check()
        return try state.withLock { state in
            for claim in claims {
                let id = "\(key.bundleIdentifier) \(claim.environment) \(claim.originalTransactionId)"
                if let owner = state.owners[id], owner != key {
                    throw OfferStoreError(.transactionClaimed, "The transaction is another customer's.")
                }
            }
            var facts = state.facts[key] ?? CustomerFacts(key: key)
            try body(&facts)
            for claim in claims { state.owners["\(key.bundleIdentifier) \(claim.environment) \(claim.originalTransactionId)"] = key }
            state.facts[key] = facts
            return facts
        }
    }

    func transactionOwner(bundleIdentifier: String, environment: String, originalTransactionId: String) async throws -> CustomerKey? {
        try check()
        return state.withLock { $0.owners["\(bundleIdentifier) \(environment) \(originalTransactionId)"] }
    }
}
