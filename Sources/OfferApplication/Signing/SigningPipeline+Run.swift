import Foundation
import Metrics
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Synchronization
import Tracing

/// What one signing flow (legacy offer, JWS offer, introductory-offer eligibility, retention offer) tells the
/// pipeline: who the customer is, which rule decides, and how to sign. Everything else — completing missing facts
/// from the App Store, loading the facts, deciding, signing with the app's active key, recording, counting — is the pipeline's, written once in
/// ``SigningPipeline/run(_:now:)``.
struct SigningFlow<Output: Sendable>: Sendable {
    /// The app, resolved.
    var app: AppConfiguration
    /// The customer the decision is about.
    var customer: CustomerKey
    /// The product of the offer.
    var productIdentifier: String
    /// The offer (empty for introductory-offer eligibility).
    var offerIdentifier: String
    /// The channel, as the decision log names it.
    var channel: DecisionChannel
    /// The product's subscription group, from the catalogue.
    var subscriptionGroupIdentifier: String?
    /// The rule that decides; `nil` says yes (no policy).
    var rule: (any EligibilityRule)?
    /// Whether a no refuses with 403 `not_eligible` (offers), or goes to `sign` as a signed no
    /// (introductory-offer eligibility).
    var refusesWhenNotEligible: Bool
    /// Signs with the key given, once the decision is made over the context shown; returns the answer and the
    /// record to log.
    var sign: FlowSigning<Output>
    /// Makes the flow idempotent per key (the App Store's `requestIdentifier`): the first answer is stored with
    /// its record, and a repeated request gets it back without a second signature. `nil`: every request answers
    /// afresh.
    var idempotency: FlowIdempotency<Output>?
    /// The transaction to ask the App Store Server API about when the store has no subscription facts for the
    /// customer (``SigningPipeline/fetchMissingFacts(_:app:subscriptionGroupIdentifier:)``); `nil`: never asked.
    var appStoreLookup: AppStoreLookup? = nil
    /// When the answer is no longer wanted (a retention request past its deadline): a decision that ends later is
    /// rolled back — nothing signed is recorded, nothing is stored — instead of committed unseen. `nil`: none.
    var deadline: ContinuousClock.Instant? = nil
}

/// How a flow signs, once the decision is made: with the key given, over the context shown; returns the answer
/// and the record to log.
enum FlowSigning<Output: Sendable>: Sendable {
    /// Without suspending (the legacy format): the flow can run on an event loop
    /// (``SigningPipeline/immediateRun(_:now:)``).
    case immediate(@Sendable (SigningKey, EligibilityDecision, EligibilityContext) throws -> SignedOutput<Output>)
    /// With suspension points (jwt-kit's signer, which is `async`).
    case suspending(@Sendable (SigningKey, EligibilityDecision, EligibilityContext) async throws -> SignedOutput<Output>)
}

/// How an idempotent flow stores its answer: the key, and the answer as text and back.
struct FlowIdempotency<Output: Sendable>: Sendable {
    var key: String
    var encode: @Sendable (Output) throws -> String
    var decode: @Sendable (String) throws -> Output
}

/// A flow's answer and the issued-signature record that must be durable before it is returned (`nil` when the
/// answer signs nothing, e.g. a retention message).
package struct SignedOutput<Output: Sendable>: Sendable {
    package var output: Output
    package var record: IssuedSignature?
}

extension SigningPipeline {
    /// The request pipeline every signing flow runs: (facts the store lacks, from the App Store) → load facts →
    /// decide → sign (self-verified) → record → answer.
    ///
    /// When the flow's rule depends on issued offers (caps, cool-downs, customer-service grants) and there
    /// is a store, the decision and the record are one atomic step per customer
    /// (``OfferStore/withCustomerTransaction(_:issuedSince:_:)``): concurrent requests — on this replica or
    /// another sharing PostgreSQL — see each other's signatures, so a cap of 1 yields one signature and a
    /// grant is spent once. Other flows read without a lock and record through the group commit.
    func run<Output: Sendable>(_ given: SigningFlow<Output>, now: Date = Date()) async throws -> Output {
        var completed = given
        // Facts the store lacks, from the App Store (stored before the decision reads them); a rule-less flow
        // reads no facts, so it asks nothing.
        if let lookup = given.appStoreLookup, given.rule != nil {
            let outcome = try await Traces.span("offer.app_store_facts") { () async throws(OfferServiceError) in
                try await fetchMissingFacts(lookup, app: given.app, subscriptionGroupIdentifier: given.subscriptionGroupIdentifier)
            }
            if case .stored(let owner, _) = outcome { completed.customer = owner }
        }
        let flow = completed
        try await recordExposures(flow.rule, customer: flow.customer, now: now)
        let since = flow.rule.flatMap { Self.issuedSince($0, now: now) }
        // One process deciding alone for the store's customers: their in-process lock and the group commit.
        if let output = try await runUnderCustomerLock(flow, since: since, now: now) { return output }
        if let store, flow.rule?.dependsOnIssuedOffers == true || flow.idempotency != nil {
            // A flow here only for idempotency, whose rules never look back, reads no signature history.
            let issuedSince = since ?? (flow.rule?.dependsOnIssuedOffers == true ? nil : Int64.max)
            let signed: SignedOutput<Output>
            // The decision is logged once the customer's lock is released: its encoding is not the lock's to wait for.
            let made = Mutex<(EligibilityDecision, EligibilityContext)?>(nil)
            defer { if let (decision, context) = made.withLock({ $0 }) { logDecision(flow, decision, context) } }
            do {
                signed = try await PipelineMetrics.time(PipelineMetrics.customerTransactionWrite) {
                    try await Traces.span("offer.customer_transaction") {
                        try await store.withCustomerTransaction(flow.customer, issuedSince: issuedSince, answerKey: flow.idempotency?.key) {
                            snapshot in
                            if let stored = snapshot.storedAnswer, let idempotency = flow.idempotency {
                                return CustomerCommit(value: SignedOutput(output: try idempotency.decode(stored), record: nil))
                            }
                            let facts = snapshot.facts ?? CustomerFacts(key: flow.customer)
                            let (decision, context) = try self.tracedDecide(flow, facts: facts, issued: snapshot.issuedSignatures, now: now) {
                                decision,
                                context in
                                made.withLock { $0 = (decision, context) }
                            }
                            let signed = try await self.tracedSign(flow, decision, context)
                            // Past the deadline the caller has answered without this: roll back rather than record a
                            // signature nobody was shown (the commit itself, milliseconds, is the only later step).
                            if let deadline = flow.deadline, ContinuousClock.now >= deadline {
                                throw OfferServiceError(.retentionTimedOut, "The answer was ready after the deadline; it was not recorded.")
                            }
                            var spent: CustomerFacts?
                            if let grant = decision.grant, let index = facts.grants.firstIndex(where: { $0.id == grant }) {
                                var updated = facts
                                updated.grants[index].usedAt = now
                                spent = updated
                            }
                            return CustomerCommit(
                                value: signed,
                                facts: spent,
                                record: signed.record,
                                answer: try flow.idempotency?.encode(signed.output)
                            )
                        }
                    }
                }
            } catch let error as OfferServiceError {
                throw error
            } catch let error as OfferSigningError {
                throw error
            } catch {
                throw OfferServiceError.storeUnavailable
            }
            if let record = signed.record { countIssued(record) }
            return signed.output
        }
        // Traced, a flow that could run at once takes the steps below instead, each in its span.
        if !Traces.areOn, let immediate = try immediateRun(flow, now: now) {
            let signed = try immediate()
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                commit(signed.record) { continuation.resume(with: $0.mapError { $0 as any Error }) }
            }
            return signed.output
        }
        var facts = CustomerFacts(key: flow.customer)
        var issued: [IssuedSignature] = []
        if let store, flow.rule != nil {
            (facts, issued) = try await Traces.span("offer.facts_read") {
                try await storeCall {
                    let facts = try await store.customerFacts(for: flow.customer) ?? facts
                    guard let since else { return (facts, []) }
                    return (
                        facts,
                        try await store.issuedSignatures(
                            matching: IssuedSignatureQuery(
                                bundleIdentifier: flow.customer.bundleIdentifier,
                                applicationUsername: flow.customer.applicationUsername,
                                since: since,
                                limit: 10_000
                            )
                        )
                    )
                }
            }
        }
        let (decision, context) = try tracedDecide(flow, facts: facts, issued: issued, now: now)
        let signed = try await tracedSign(flow, decision, context)
        if let store {
            try await storeCall {
                if let record = signed.record {
                    try await PipelineMetrics.time(PipelineMetrics.groupCommitWrite) {
                        try await Traces.span("offer.signature_log.batch_wait") { try await store.record(record) }
                    }
                }
                // A rule of one's own that spends a grant without declaring `dependsOnIssuedOffers` still spends it.
                if let grant = decision.grant {
                    try await store.updateCustomer(flow.customer) { facts in
                        if let index = facts.grants.firstIndex(where: { $0.id == grant }) { facts.grants[index].usedAt = now }
                    }
                }
            }
        }
        if let record = signed.record { countIssued(record) }
        return signed.output
    }

    /// Where `rule` looks back to in issued signatures at `now` (Unix ms); `nil`: it has no lookback.
    static func issuedSince(_ rule: any EligibilityRule, now: Date) -> Int64? {
        rule.lookback.map { Int64((now.timeIntervalSince1970 - $0) * 1000) }
    }

    /// The pipeline for a flow that needs nothing it would wait for — no policy rule reading the store, no App
    /// Store lookup, no idempotency or deadline, a signer that does not suspend — as a step that runs without
    /// suspending (on an event loop): decide → sign (self-verified); the caller then ``commit(_:completion:)``s
    /// the record before answering. `nil`: the flow needs ``run(_:now:)``. Checking costs nothing and has no
    /// effect, so a caller can ask before it spends anything (a rate-limit token) on the request.
    func immediateRun<Output: Sendable>(
        _ flow: SigningFlow<Output>,
        now: Date = Date()
    ) throws(OfferServiceError) -> (() throws -> SignedOutput<Output>)? {
        guard case .immediate(let signer) = flow.sign, flow.idempotency == nil, flow.deadline == nil,
            flow.rule == nil || (store == nil && flow.appStoreLookup == nil)
        else { return nil }
        return {
            // No store behind the rule (or no rule): it decides over what the request says alone.
            let (decision, context) = try self.decide(flow, facts: CustomerFacts(key: flow.customer), issued: [], now: now)
            return try self.sign(flow, with: signer, decision, context)
        }
    }

    /// Records a signature through the store's group commit and calls `completion` once it is durable (at once
    /// without a store), then counts it; a store failure is 503 `store_unavailable`. `completion` runs on a
    /// store thread: an event-loop caller hops back itself. `startWhenReady`: see
    /// ``OfferStore/record(_:startWhenReady:completion:)`` (an event loop gathers a tick's records into one batch).
    package func commit(
        _ record: IssuedSignature?,
        startWhenReady: StartWhenReady? = nil,
        completion: @escaping @Sendable (Result<Void, OfferServiceError>) -> Void
    ) {
        guard let record else { return completion(.success(())) }
        guard let store else {
            countIssued(record)
            return completion(.success(()))
        }
        let start = ContinuousClock.now
        let recorded: @Sendable (Result<Void, any Error>) -> Void = { result in
            PipelineMetrics.groupCommitWrite.record(duration: ContinuousClock.now - start)
            switch result {
            case .success:
                self.countIssued(record)
                completion(.success(()))
            case .failure(let error as OfferServiceError):
                completion(.failure(error))
            case .failure:
                completion(.failure(.storeUnavailable))
            }
        }
        store.record(record, startWhenReady: startWhenReady, completion: recorded)
    }

    /// ``decide(_:facts:issued:now:deferLogging:)`` in a span `offer.decide` that says what was decided over what
    /// (counts of the facts read, never the customer), when spans are on.
    func tracedDecide<Output>(
        _ flow: SigningFlow<Output>,
        facts: CustomerFacts,
        issued: [IssuedSignature],
        now: Date,
        deferLogging: ((EligibilityDecision, EligibilityContext) -> Void)? = nil
    ) throws -> (EligibilityDecision, EligibilityContext) {
        guard Traces.areOn else { return try decide(flow, facts: facts, issued: issued, now: now, deferLogging: deferLogging) }
        let attributes: SpanAttributes = [
            "offer_signer.channel": .string(flow.channel.rawValue), "offer_signer.product": .string(flow.productIdentifier),
            "offer_signer.offer": .string(flow.offerIdentifier), "offer_signer.policy": .bool(flow.rule != nil),
            "offer_signer.facts.subscriptions": .int64(Int64(facts.subscriptions.count)),
            "offer_signer.facts.issued_signatures": .int64(Int64(issued.count)),
        ]
        return try Traces.span("offer.decide", attributes) {
            do {
                let made = try decide(flow, facts: facts, issued: issued, now: now, deferLogging: deferLogging)
                Traces.annotate { $0["offer_signer.eligible"] = made.0.isEligible }
                return made
            } catch {
                Traces.annotate { attributes in
                    attributes["offer_signer.eligible"] = false
                    if let reasons = (error as? OfferServiceError)?.reasons {
                        attributes["offer_signer.reasons"] = reasons.map { "\($0.rule):\($0.code)" }
                    }
                }
                throw error
            }
        }
    }

    /// ``sign(_:_:_:)`` in a span `offer.sign` (the key's identifier and the format), when spans are on.
    func tracedSign<Output>(
        _ flow: SigningFlow<Output>,
        _ decision: EligibilityDecision,
        _ context: EligibilityContext
    ) async throws -> SignedOutput<Output> {
        guard Traces.areOn else { return try await sign(flow, decision, context) }
        return try await Traces.span("offer.sign") {
            let signed = try await sign(flow, decision, context)
            Traces.annotate { attributes in
                attributes["offer_signer.signed"] = signed.record != nil
                if let record = signed.record {
                    attributes["offer_signer.key_id"] = record.keyIdentifier
                    attributes["offer_signer.format"] = record.format
                }
            }
            return signed
        }
    }

    /// The rule's decision over the facts, and the context it saw; a no refuses when the flow says so. The decision is
    /// logged (``logDecision(_:_:_:)``), or handed to `deferLogging` to log later (outside a customer's lock).
    func decide<Output>(
        _ flow: SigningFlow<Output>,
        facts: CustomerFacts,
        issued: [IssuedSignature],
        now: Date,
        deferLogging: ((EligibilityDecision, EligibilityContext) -> Void)? = nil
    ) throws(OfferServiceError) -> (EligibilityDecision, EligibilityContext) {
        let context = EligibilityContext(
            bundleIdentifier: flow.app.bundleIdentifier,
            productIdentifier: flow.productIdentifier,
            offerIdentifier: flow.offerIdentifier,
            subscriptionGroupIdentifier: flow.subscriptionGroupIdentifier,
            facts: facts,
            issuedSignatures: issued,
            now: now
        )
        guard let rule = flow.rule else { return (.eligible(), context) }
        let decision = rule.evaluate(context)
        if let deferLogging { deferLogging(decision, context) } else { logDecision(flow, decision, context) }
        if flow.refusesWhenNotEligible {
            try requireEligible(
                decision,
                offer: OfferMetrics.labels(
                    policy,
                    bundleIdentifier: flow.app.bundleIdentifier,
                    productIdentifier: flow.productIdentifier,
                    offerIdentifier: flow.offerIdentifier
                )
            )
        }
        return (decision, context)
    }

    /// Signs with the app's active key; a failed self-check is counted and never returned.
    func sign<Output>(
        _ flow: SigningFlow<Output>,
        _ decision: EligibilityDecision,
        _ context: EligibilityContext
    ) async throws -> SignedOutput<Output> {
        switch flow.sign {
        case .immediate(let signer):
            return try sign(flow, with: signer, decision, context)
        case .suspending(let signer):
            let key = try keys.current.activeKey(forApp: flow.app.bundleIdentifier)
            do {
                return try await PipelineMetrics.time(PipelineMetrics.signing) { try await signer(key, decision, context) }
            } catch {
                countSelfCheckFailure(error)
                throw error
            }
        }
    }

    /// ``sign(_:_:_:)`` for a signer that does not suspend, itself without suspending (``immediateRun(_:now:)``).
    func sign<Output>(
        _ flow: SigningFlow<Output>,
        with signer: (SigningKey, EligibilityDecision, EligibilityContext) throws -> SignedOutput<Output>,
        _ decision: EligibilityDecision,
        _ context: EligibilityContext
    ) throws -> SignedOutput<Output> {
        let key = try keys.current.activeKey(forApp: flow.app.bundleIdentifier)
        let start = ContinuousClock.now
        defer { PipelineMetrics.signing.record(duration: ContinuousClock.now - start) }
        do {
            return try signer(key, decision, context)
        } catch {
            countSelfCheckFailure(error)
            throw error
        }
    }

    /// Counts a failed self-check (`offer_signer_signature_self_check_failures_total`); the error is rethrown.
    private func countSelfCheckFailure(_ error: any Error) {
        if let error = error as? OfferSigningError, error.code == .selfCheckFailed { selfCheckFailures.increment() }
    }
}
