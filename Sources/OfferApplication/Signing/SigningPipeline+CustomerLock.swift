import Foundation
import OfferEligibility
import OfferModel
import OfferStore
import Synchronization

extension SigningPipeline {
    /// The pipeline for a rule that reads issued offers (caps, cool-downs, grants) where the store serializes one
    /// customer's decisions without a write transaction per decision (``CustomerLockingStore/customerLocks``: a
    /// SQLite file a server holds, a store in memory, PostgreSQL): the customer's in-process lock. Under the lock:
    /// the facts and signatures read together, decide, sign (self-verified), and the record made durable through
    /// the group commit — shared with every other customer's records — before the lock passes on, so the next
    /// decision for the customer reads it. On PostgreSQL the batch checks that no replica recorded a signature for
    /// the customer since the read; a record refused so is not written, its signature never shown, and the
    /// decision is made again over a fresh read (at most ``decisionAttempts`` times). A decision that spends a
    /// customer-service grant records its signature and the spent grant in one customer transaction, which checks
    /// the same. The decision that stands is logged once the lock is released.
    ///
    /// `nil`: the flow is not one for this path (no such rule, an idempotency key, a deadline) or the store has no
    /// such lock (a file the tools opened): ``run(_:now:)`` goes on with ``OfferStore/withCustomerTransaction(_:issuedSince:answerKey:_:)``.
    func runUnderCustomerLock<Output: Sendable>(_ flow: SigningFlow<Output>, since: Int64?, now: Date) async throws -> Output? {
        guard flow.rule?.dependsOnIssuedOffers == true, flow.idempotency == nil, flow.deadline == nil,
            let store = store as? any CustomerLockingStore, let locks = store.customerLocks
        else { return nil }
        // The decision, its context and the stored facts' text it was read from (the log's snapshot is made of it).
        let made = Mutex<(EligibilityDecision, EligibilityContext, String?)?>(nil)
        defer { if let (decision, context, text) = made.withLock({ $0 }) { logDecision(flow, decision, context, storedFacts: text) } }
        // A rule that reads issued offers without a lookback reads all of the customer's, as in a transaction.
        let since = since ?? .min
        let signed: SignedOutput<Output> = try await Traces.span("offer.customer_lock") {
            try await locks.withLock(flow.customer) {
                for _ in 0..<Self.decisionAttempts {
                    let snapshot = try await Traces.span("offer.facts_read") {
                        try await storeCall { try await store.customerSnapshot(flow.customer, issuedSince: since) }
                    }
                    let read = IssuedRead(customer: flow.customer, since: since, count: snapshot.issued.count)
                    let facts = snapshot.facts ?? CustomerFacts(key: flow.customer)
                    let (decision, context) = try tracedDecide(flow, facts: facts, issued: snapshot.issued, now: now) { decision, context in
                        made.withLock { $0 = (decision, context, snapshot.storedFacts) }
                    }
                    let signed = try await tracedSign(flow, decision, context)
                    let recorded: Bool
                    if let grant = decision.grant {
                        recorded = try await spend(grant, recording: signed.record, for: flow.customer, decidedOver: read, now: now, in: store)
                    } else if let record = signed.record {
                        recorded = try await storeCall {
                            try await PipelineMetrics.time(PipelineMetrics.groupCommitWrite) {
                                try await Traces.span("offer.signature_log.batch_wait") { try await store.record(record, decidedOver: read) }
                            }
                        }
                    } else {
                        recorded = true
                    }
                    if recorded { return signed }
                }
                throw OfferServiceError(
                    .storeUnavailable,
                    "Other servers kept recording offers for this customer while this one decided; try again in a moment."
                )
            }
        }
        if let record = signed.record { countIssued(record) }
        return signed.output
    }

    /// ``runUnderCustomerLock(_:since:now:)`` as a step that runs without suspending (on an event loop), for a flow
    /// ``immediateRun(_:now:)`` would take but for its rule over stored facts and issued offers, where the store
    /// reads at once (``CustomerLockingStore/customerSnapshotAtOnce(_:issuedSince:)``: a SQLite file a server
    /// holds, a reader free) and the customer's lock is free: lock → read → decide (logged) → sign (self-verified).
    /// The lock stays held in the answer (``CustomerLockHeld``) until its record is durable
    /// (``commit(_:startWhenReady:completion:)``), through the same group commit as a flow without a policy — one
    /// batch for a tick's requests.
    ///
    /// `nil`: nothing was taken or logged, and ``run(_:now:)`` decides instead: the flow is not one for this step
    /// (a signer that suspends, an App Store lookup, idempotency, a deadline, a running experiment to record an
    /// exposure for, spans on), the lock is held or waited for, every reader is in use, or the decision spends a
    /// customer-service grant (a transaction of its own). A refusal throws as ``run(_:now:)`` does, the decision
    /// logged and the lock released.
    func runAtOnceUnderCustomerLock<Output: Sendable>(_ flow: SigningFlow<Output>, now: Date = Date()) throws -> CustomerLockHeld<Output>? {
        guard case .immediate(let signer) = flow.sign, let rule = flow.rule, rule.dependsOnIssuedOffers, flow.appStoreLookup == nil,
            flow.idempotency == nil, flow.deadline == nil, !Traces.areOn,
            let store = store as? any CustomerLockingStore, let locks = store.customerLocks,
            !OfferPolicy.experiments(in: rule).contains(where: { $0.isRunning(at: now) }),
            locks.lockIfFree(flow.customer)
        else { return nil }
        var held = true
        defer { if held { locks.unlock(flow.customer) } }
        // As in ``runUnderCustomerLock(_:since:now:)``: a rule without a lookback reads all of the customer's.
        let since = Self.issuedSince(rule, now: now) ?? .min
        guard let read = store.customerSnapshotAtOnce(flow.customer, issuedSince: since) else { return nil }
        let snapshot: CustomerLockSnapshot
        do { snapshot = try read.get() } catch { throw OfferServiceError.storeUnavailable }
        var made: (EligibilityDecision, EligibilityContext)?
        let decision: EligibilityDecision
        let context: EligibilityContext
        do {
            (decision, context) = try decide(flow, facts: snapshot.facts ?? CustomerFacts(key: flow.customer), issued: snapshot.issued, now: now) {
                made = ($0, $1)
            }
        } catch {
            if let (decision, context) = made { logDecision(flow, decision, context, storedFacts: snapshot.storedFacts) }
            throw error
        }
        guard decision.grant == nil else { return nil }
        logDecision(flow, decision, context, storedFacts: snapshot.storedFacts)
        let signed = try sign(flow, with: signer, decision, context)
        held = false
        return CustomerLockHeld(signed: signed, locks: locks, customer: flow.customer)
    }

    /// Records the signature of a decision made under its customer's lock
    /// (``runAtOnceUnderCustomerLock(_:now:)``) through the group commit, releases the lock once it is durable (or
    /// failed), then calls `completion` (on a store thread).
    package func commit<Output>(
        _ held: CustomerLockHeld<Output>,
        startWhenReady: StartWhenReady? = nil,
        completion: @escaping @Sendable (Result<Void, OfferServiceError>) -> Void
    ) {
        commit(held.signed.record, startWhenReady: startWhenReady) { result in
            held.unlock()
            completion(result)
        }
    }

    /// How many times a decision under a customer's lock is made before the request is refused, when each one's
    /// record is refused because another replica recorded a signature for the customer meanwhile.
    static let decisionAttempts = 8

    /// Marks the grant used and records its signature, in one transaction; `false` (nothing written): the customer's
    /// signatures since the decision's read changed meanwhile (another replica recorded one).
    private func spend(
        _ grant: String,
        recording record: IssuedSignature?,
        for customer: CustomerKey,
        decidedOver read: IssuedRead,
        now: Date,
        in store: any OfferStore
    ) async throws(OfferServiceError) -> Bool {
        try await storeCall {
            try await store.withCustomerTransaction(customer, issuedSince: read.since) { snapshot in
                guard snapshot.issuedSignatures.count == read.count else { return CustomerCommit(value: false) }
                // Under the customer's lock no decision of this process spent it meanwhile; an admin may have.
                guard var facts = snapshot.facts, let index = facts.grants.firstIndex(where: { $0.id == grant && $0.usedAt == nil }) else {
                    throw OfferServiceError(
                        .notEligible,
                        "This customer may not have this offer; see reasons.",
                        reasons: [
                            EligibilityReason(
                                rule: "customer-service-grant",
                                code: "no_grant",
                                message: "The customer-service grant was used or withdrawn meanwhile."
                            )
                        ]
                    )
                }
                facts.grants[index].usedAt = now
                return CustomerCommit(value: true, facts: facts, record: record)
            }
        }
    }
}

/// A decision made at once under its customer's lock (``SigningPipeline/runAtOnceUnderCustomerLock(_:now:)``): the
/// answer and its record, the lock still held until ``SigningPipeline/commit(_:startWhenReady:completion:)``
/// has made the record durable. A value dropped uncommitted releases the lock, so no path can leave it held.
package final class CustomerLockHeld<Output: Sendable>: Sendable {
    /// The answer and the record that must be durable before it is returned.
    package let signed: SignedOutput<Output>
    private let locks: CustomerLocks
    private let customer: CustomerKey
    /// Whether the lock is still held.
    private let held = Atomic<Bool>(true)

    init(signed: SignedOutput<Output>, locks: CustomerLocks, customer: CustomerKey) {
        self.signed = signed
        self.locks = locks
        self.customer = customer
    }

    deinit { unlock() }

    /// Releases the customer's lock, once.
    func unlock() {
        if held.exchange(false, ordering: .acquiringAndReleasing) { locks.unlock(customer) }
    }
}
