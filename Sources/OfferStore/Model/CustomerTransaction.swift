import OfferModel

/// What ``OfferStore/withCustomerTransaction(_:issuedSince:_:)`` shows its body: one customer, locked.
public struct CustomerSnapshot: Sendable, Hashable {
    /// The customer's facts, or `nil` if the store has never heard of them.
    public var facts: CustomerFacts?
    /// The signatures issued to this customer (any product, any offer) since the transaction's `since`, newest
    /// first.
    public var issuedSignatures: [IssuedSignature]
    /// The answer stored earlier under the transaction's `answerKey`, if any: the body should return it, and
    /// nothing it decides is written (empty `issuedSignatures` then).
    public var storedAnswer: String?

    /// Creates a snapshot.
    public init(facts: CustomerFacts?, issuedSignatures: [IssuedSignature], storedAnswer: String? = nil) {
        self.facts = facts
        self.issuedSignatures = issuedSignatures
        self.storedAnswer = storedAnswer
    }
}

/// What the body of ``OfferStore/withCustomerTransaction(_:issuedSince:_:)`` decided: the value to return, and
/// what to write in the same transaction.
public struct CustomerCommit<T: Sendable>: Sendable {
    /// What `withCustomerTransaction` returns.
    public var value: T
    /// The customer's new facts (a grant marked used, …), or `nil` to leave them unchanged.
    public var facts: CustomerFacts?
    /// The signature issued to this customer, to record, or `nil` (the offer was refused).
    public var record: IssuedSignature?
    /// The answer to store under the transaction's `answerKey` (an idempotent request's response), or `nil`.
    public var answer: String?

    /// Creates a commit.
    public init(value: T, facts: CustomerFacts? = nil, record: IssuedSignature? = nil, answer: String? = nil) {
        self.value = value
        self.facts = facts
        self.record = record
        self.answer = answer
    }
}

extension CustomerCommit where T == Void {
    /// A commit that returns nothing.
    public init(facts: CustomerFacts? = nil, record: IssuedSignature? = nil) {
        self.init(value: (), facts: facts, record: record)
    }
}
