import OfferModel

/// What the store knows of customers (``CustomerFacts``) and which customer owns which original transaction.
public protocol CustomerFactsStore: Sendable {
    /// The facts of a customer, or `nil` if the store has never heard of them.
    func customerFacts(for key: CustomerKey) async throws -> CustomerFacts?

    /// The customers (of any app) who hold a subscription with this original transaction identifier.
    func customers(withOriginalTransactionId originalTransactionId: String) async throws -> [CustomerKey]

    /// Reads, changes and writes a customer's facts in one transaction (concurrent updates of one customer
    /// lose nothing). A customer the store has not heard of starts from empty facts.
    ///
    /// `claims`: the original transactions this write files under the customer. Each is claimed in the same
    /// transaction, one owner per (app, environment, original transaction) across every process sharing the
    /// database: the first claim wins, a later claim by its owner passes, and a claim by anyone else rolls the
    /// whole write back (``TransactionClaim``).
    /// - Returns: the facts as written.
    /// - Throws: ``OfferStoreError`` `transactionClaimed` (nothing written), `unavailable`; an error `body` throws,
    ///   unchanged.
    @discardableResult
    func updateCustomer(
        _ key: CustomerKey,
        claiming claims: [TransactionClaim],
        _ body: @Sendable (inout CustomerFacts) throws -> Void
    ) async throws -> CustomerFacts

    /// The customer an original transaction of an app is claimed by (``TransactionClaim``), or `nil`.
    func transactionOwner(bundleIdentifier: String, environment: String, originalTransactionId: String) async throws -> CustomerKey?

    /// What a notification's binding reads, together: ``customers(withOriginalTransactionId:)`` of
    /// `originalTransactionId` (none when `nil`) and ``customerFacts(for:)`` of `candidate` (`nil` when `nil`).
    func bindingRead(originalTransactionId: String?, candidate: CustomerKey?) async throws -> (owners: [CustomerKey], candidateFacts: CustomerFacts?)
}

extension CustomerFactsStore {
    /// The two reads, one after the other (a store without a read of both at once).
    public func bindingRead(
        originalTransactionId: String?,
        candidate: CustomerKey?
    ) async throws -> (owners: [CustomerKey], candidateFacts: CustomerFacts?) {
        try await bindingReadOneByOne(originalTransactionId: originalTransactionId, candidate: candidate)
    }

    /// ``bindingRead(originalTransactionId:candidate:)`` as its two reads, one after the other: what a store reads
    /// when it has no read of both at once.
    public func bindingReadOneByOne(
        originalTransactionId: String?,
        candidate: CustomerKey?
    ) async throws -> (owners: [CustomerKey], candidateFacts: CustomerFacts?) {
        var owners: [CustomerKey] = []
        if let originalTransactionId { owners = try await customers(withOriginalTransactionId: originalTransactionId) }
        guard let candidate else { return (owners, nil) }
        return (owners, try await customerFacts(for: candidate))
    }
}

extension CustomerFactsStore {
    /// ``updateCustomer(_:claiming:_:)`` claiming no transaction (flags, grants, storefront).
    @discardableResult
    public func updateCustomer(_ key: CustomerKey, _ body: @Sendable (inout CustomerFacts) throws -> Void) async throws -> CustomerFacts {
        try await updateCustomer(key, claiming: [], body)
    }
}
