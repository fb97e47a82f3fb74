import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Synchronization
import Tracing

/// What the policy says for one real-time retention request, and why (`offer-signer retention explain`).
public struct RetentionExplanation: Sendable {
    /// The customer the request was matched to.
    public var customer: CustomerKey
    /// Whether the store knew the customer (a stranger is judged on empty facts).
    public var customerKnown: Bool
    /// Every entry looked at, in order, with its decision; the chosen one is the last eligible.
    public var choice: OfferPolicy.RetentionChoice
}

/// Retention Messaging's real-time requests: each verified, the product's retention entries tried for the customer
/// who owns the subscription, a promotional offer signed through the one ``SigningPipeline`` (channel `retention`),
/// the answer stored per `requestIdentifier`, the fallback message answered when the answer is late. The use case of
/// `POST /v1/retention/appstore` and `offer-signer retention explain`.
public final class RetentionAnswering: Sendable {
    /// The pipeline an answer's decision and signature run through.
    let pipeline: SigningPipeline
    /// How long a retention request may take before the fallback message is answered (`OFFER_SIGNER_RETENTION_DEADLINE`).
    public let deadline: Duration
    /// The products whose retention requests got no answer, logged once each.
    let unanswered = Mutex<Set<String>>([])
    let logger = Logger(label: "offer-signer.retention")
    /// Which catalogue messages Apple has approved (``approvedRetentionEntries(_:bundleIdentifier:productIdentifier:environment:)``).
    let approvals = RetentionApprovals()

    /// Retention answers signed through `pipeline`, late after `deadline` (Apple gives up after 700 ms).
    public init(pipeline: SigningPipeline, deadline: Duration = .milliseconds(500)) {
        self.pipeline = pipeline
        self.deadline = deadline
    }

    /// Answers the App Store's real-time "Get Retention Message" request (`POST /v1/retention/appstore`).
    ///
    /// The `signedPayload` is verified like a notification (chain, markers, `signedDate`, environment) and must
    /// carry the `appAppleId` of a served app. The product's `retention` entries are tried in order for the
    /// customer who owns the request's `originalTransactionId` (a stranger: empty facts); the first that holds
    /// is the answer. A promotional offer is signed (V2 with `transactionId` = the original transaction, or V1),
    /// self-verified and recorded with channel `retention` and the `requestIdentifier`; the answer is stored, so a
    /// repeated `requestIdentifier` gets the same answer and no second signature. When the answer is not ready
    /// within ``deadline``, the product's fallback message is answered instead.
    /// - Throws: ``OfferServiceError`` 400 `invalid_signed_payload`, 404 `no_retention_answer` (the App Store shows
    ///   its default message), 503 `retention_timed_out` / `store_unavailable` / `issuer_not_configured`.
    public func answerRetention(signedPayload: String) async throws -> RealtimeResponseBody {
        let (bundleIdentifier, request) = try await verifiedRetentionRequest(signedPayload, fresh: true)
        return try await answerRetention(request, bundleIdentifier: bundleIdentifier, now: pipeline.notifications?.now() ?? Date())
    }

    /// A retention request's `signedPayload`, verified, and the app whose `appAppleId` it carries. `fresh`: signed
    /// within the clock skew of now by a chain valid now (a live request; a captured one explained need not be).
    private func verifiedRetentionRequest(
        _ signedPayload: String,
        fresh: Bool
    ) async throws(OfferServiceError) -> (bundleIdentifier: String, request: DecodedRealtimeRequestBody) {
        guard let notifications = pipeline.notifications else {
            throw OfferServiceError(
                .storeUnavailable,
                """
                Retention requests cannot be verified: the service has no customer store or no app it can verify App Store data for (set the \
                app's appAppleId, OFFER_SIGNER_ENVIRONMENTS, and OFFER_SIGNER_TRUSTED_ROOTS for test chains).
                """
            )
        }
        return try await Traces.span("app_store.verify") { () async throws(OfferServiceError) in
            try await notifications.verifyRealtimeRequest(signedPayload: signedPayload, fresh: fresh)
        }
    }

    /// Answers a verified real-time retention request for the app `bundleIdentifier` (see
    /// ``answerRetention(signedPayload:)``).
    public func answerRetention(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        now: Date = Date()
    ) async throws -> RealtimeResponseBody {
        let app = try pipeline.app(named: bundleIdentifier)
        let product: OfferPolicy.Product
        let entries: [OfferPolicy.RetentionEntry]
        do {
            let (found, listed) = try retentionEntries(app: app, productIdentifier: request.productIdentifier ?? "")
            product = found
            entries = await approvedRetentionEntries(
                listed,
                bundleIdentifier: app.bundleIdentifier,
                productIdentifier: found.productIdentifier,
                environment: request.environment
            )
        } catch {
            noteNoRetentionAnswer(error, app: app, productIdentifier: request.productIdentifier ?? "")
            throw error
        }
        var answer: RealtimeResponseBody?
        // The answer's record for the outcome report, started as soon as the answer is decided (before its claim
        // and signature are written, and beside them).
        let recording = Mutex<Task<Void, Never>?>(nil)
        do {
            let due = ContinuousClock.now + deadline
            let deadlineMilliseconds = Int64(
                deadline.components.seconds * 1000 + deadline.components.attoseconds / 1_000_000_000_000_000
            )
            answer = try await Traces.span("retention.deadline", ["offer_signer.retention.deadline_ms": .int64(deadlineMilliseconds)]) {
                let answer = try await withDeadline(deadline) {
                    try await self.decideRetention(request, app: app, product: product, entries: entries, deadline: due, now: now) { answer in
                        recording.withLock {
                            $0 = self.startRecordingRetentionOutcome(
                                request,
                                bundleIdentifier: app.bundleIdentifier,
                                product: product.productIdentifier,
                                answer: answer,
                                now: now
                            )
                        }
                    }
                }
                Traces.annotate { $0["offer_signer.retention.in_time"] = answer != nil }
                return answer
            }
        } catch let error as OfferServiceError where error.code == .appStoreUnavailable {
            // The App Store could not be asked about a stranger within its budget: as when the deadline passes.
            answer = nil
        } catch let error as OfferServiceError where error.code == .noRetentionAnswer {
            noteNoRetentionAnswer(error, app: app, productIdentifier: product.productIdentifier)
            throw error
        } catch let error as OfferServiceError where error.code == .requestIdentifierConflict {
            PipelineMetrics.countRetentionAnswer("request_identifier_conflict")
            logger.warning(
                "a retention request reused a requestIdentifier answered for another request; refused",
                metadata: [
                    "productIdentifier": "\(product.productIdentifier)", "requestIdentifier": "\(request.requestIdentifier ?? "-")",
                ]
            )
            throw error
        }
        if let answer {
            PipelineMetrics.countRetentionAnswer(
                answer.promotionalOffer != nil ? "promotionalOffer" : answer.alternateProduct != nil ? "alternateProduct" : "message"
            )
            if let started = recording.withLock({ $0 }) {
                await Self.waitForRecording(started)
            } else {
                // A stored answer (a repeated requestIdentifier): its record was written with it; written again, it is skipped.
                await recordRetentionOutcome(
                    request,
                    bundleIdentifier: app.bundleIdentifier,
                    product: product.productIdentifier,
                    answer: answer,
                    now: now
                )
            }
            return answer
        }
        guard let fallback = entries.first(where: \.isFallback) else {
            PipelineMetrics.countRetentionAnswer("timed_out")
            throw OfferServiceError(
                .retentionTimedOut,
                """
                The retention answer was not ready within \(deadline) and \(product.productIdentifier) has no fallback message; the \
                App Store shows its default message.
                """
            )
        }
        PipelineMetrics.countRetentionAnswer("fallback_after_deadline")
        // Debug, not warning: under overload this happens on every request; the metric counts it.
        logger.debug(
            "retention answer not ready within the deadline; answered the fallback",
            metadata: [
                "productIdentifier": "\(product.productIdentifier)", "deadline": "\(deadline)",
            ]
        )
        let fallbackAnswer = Self.retentionAnswer(fallback, signed: nil)
        await recordRetentionOutcome(
            request,
            bundleIdentifier: app.bundleIdentifier,
            product: product.productIdentifier,
            answer: fallbackAnswer,
            now: now,
            wait: .zero
        )
        return fallbackAnswer
    }

    /// Which entry the policy chooses for a request and why, read without a lock and without signing.
    public func explainRetention(
        _ request: DecodedRealtimeRequestBody,
        bundleIdentifier: String,
        now: Date = Date()
    ) async throws -> RetentionExplanation {
        let app = try pipeline.app(named: bundleIdentifier)
        let (product, entries) = try retentionEntries(app: app, productIdentifier: request.productIdentifier ?? "")
        let (customer, known) = try await retentionCustomer(app: app, originalTransactionId: request.originalTransactionId ?? "")
        let selection = RetentionSelection(entries)
        let base = try await pipeline.context(
            app: app,
            product: product,
            offerIdentifier: "",
            applicationUsername: customer.applicationUsername,
            lookback: selection.lookback,
            now: now
        )
        return RetentionExplanation(customer: customer, customerKnown: known, choice: OfferPolicy.chooseRetention(entries, in: base))
    }

    /// Explains a request given as a file would hold it (`offer-signer retention explain`): Apple's body
    /// `{"signedPayload": …}` or a bare signed payload (verified like a live request), or a decoded request
    /// (`DecodedRealtimeRequestBody` JSON, not verified; its app is found by `appAppleId`, else the only app).
    /// - Throws: ``OfferServiceError`` 400 for what cannot be read or does not verify.
    public func explainRetention(document text: String, now: Date = Date()) async throws -> RetentionExplanation {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        struct Body: Decodable { var signedPayload: String? }
        var signedPayload: String?
        if trimmed.hasPrefix("{") {
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(trimmed.utf8)) else {
                throw OfferServiceError.invalidRequest(
                    field: "file",
                    "The file is not JSON: give {\"signedPayload\": …}, a signed payload, or a decoded request."
                )
            }
            signedPayload = body.signedPayload
        } else {
            signedPayload = trimmed
        }
        if let signedPayload {
            let (bundleIdentifier, request) = try await verifiedRetentionRequest(signedPayload, fresh: false)
            return try await explainRetention(request, bundleIdentifier: bundleIdentifier, now: now)
        }
        guard let request = try? JSONDecoder().decode(DecodedRealtimeRequestBody.self, from: Data(trimmed.utf8)),
            request.originalTransactionId != nil, request.productIdentifier != nil
        else {
            throw OfferServiceError.invalidRequest(
                field: "file",
                "A decoded request needs originalTransactionId (a string) and productId; appAppleId picks the app when several are served."
            )
        }
        let bundleIdentifier = request.appAppleId.flatMap { id in pipeline.policy?.apps.first(where: { $0.appAppleId == id })?.bundleIdentifier }
        return try await explainRetention(request, bundleIdentifier: try pipeline.app(named: bundleIdentifier).bundleIdentifier, now: now)
    }

    /// The product's retention entries.
    /// - Throws: 404 `no_retention_answer` when the policy lists none for it.
    private func retentionEntries(
        app: AppConfiguration,
        productIdentifier: String
    ) throws(OfferServiceError) -> (OfferPolicy.Product, [OfferPolicy.RetentionEntry]) {
        guard let product = pipeline.policy?.app(app.bundleIdentifier)?.product(productIdentifier), !product.retention.isEmpty else {
            throw OfferServiceError(
                .noRetentionAnswer,
                """
                The policy has no retention entries for \(productIdentifier.prefix(PayloadField.maximumLength)) of \(app.bundleIdentifier); the \
                App Store shows its default message. Add a retention: list to the product (docs/retention.md).
                """
            )
        }
        return (product, product.retention)
    }

    /// The customer who owns an original transaction: one known by an account (appAccountToken / the app's
    /// applicationUsername) first, else the one notifications filed under `otid:`; a stranger is keyed `otid:` too,
    /// so the signature counts against the customer the next notification creates.
    private func retentionCustomer(app: AppConfiguration, originalTransactionId: String) async throws(OfferServiceError) -> (CustomerKey, known: Bool)
    {
        let stranger = CustomerKey(bundleIdentifier: app.bundleIdentifier, applicationUsername: "otid:\(originalTransactionId)")
        guard let store = pipeline.store else { return (stranger, false) }
        let owners = try await storeCall { try await store.customers(withOriginalTransactionId: originalTransactionId) }
            .filter { $0.bundleIdentifier == app.bundleIdentifier }
        if let owner = owners.first(where: { !$0.applicationUsername.hasPrefix("otid:") }) ?? owners.first { return (owner, true) }
        return (stranger, false)
    }

    /// The pipeline's retention flow: the customer, the entries as one rule, an answer signed only for a
    /// promotional offer, idempotent per `requestIdentifier`.
    /// `decided` is told the answer once it is decided and signed, before it is stored and its signature recorded.
    private func decideRetention(
        _ request: DecodedRealtimeRequestBody,
        app: AppConfiguration,
        product: OfferPolicy.Product,
        entries: [OfferPolicy.RetentionEntry],
        deadline: ContinuousClock.Instant,
        now: Date,
        decided: @escaping @Sendable (RealtimeResponseBody) -> Void
    ) async throws -> RealtimeResponseBody {
        let originalTransactionId = request.originalTransactionId ?? ""
        let requestIdentifier = (request.requestIdentifier ?? "").lowercased()
        let binding = "\(originalTransactionId) \(product.productIdentifier)"
        let (stranger, known) = try await retentionCustomer(app: app, originalTransactionId: originalTransactionId)
        var flow = SigningFlow<RealtimeResponseBody>(
            app: app,
            customer: stranger,
            productIdentifier: product.productIdentifier,
            offerIdentifier: "",
            channel: .retention,
            subscriptionGroupIdentifier: product.subscriptionGroupIdentifier,
            rule: RetentionSelection(entries),
            refusesWhenNotEligible: false,
            sign: .suspending { key, decision, context in
                // The customer the decision was made for: the store's, or the one the App Store's answer named.
                let customer = context.facts.key
                // The entry the pipeline's decision chose (RetentionSelection), acted on as decided: not decided again.
                guard let index = decision.choice, entries.indices.contains(index) else {
                    PipelineMetrics.countRefusal(
                        decision.reasons,
                        offer: OfferMetrics.labels(
                            self.pipeline.policy,
                            bundleIdentifier: app.bundleIdentifier,
                            productIdentifier: product.productIdentifier,
                            offerIdentifier: ""
                        )
                    )
                    throw OfferServiceError(
                        .noRetentionAnswer,
                        """
                        No retention entry of \(product.productIdentifier) holds for this customer and there is no fallback; the App Store \
                        shows its default message.
                        """,
                        reasons: decision.reasons
                    )
                }
                let entry = entries[index]
                // The answer, told to `decided` before the pipeline stores it and records its signature.
                func answering(_ signed: RetentionSignature?, record: IssuedSignature?) -> SignedOutput<RealtimeResponseBody> {
                    let answer = Self.retentionAnswer(entry, signed: signed)
                    decided(answer)
                    return SignedOutput(output: answer, record: record)
                }
                guard case .promotionalOffer(let offerIdentifier, let format) = entry.answer else {
                    return answering(nil, record: nil)
                }
                switch format {
                case .v2:
                    // Only a V2 answer needs the issuer: without one, messages and V1 answers still go out.
                    let issuer = try self.pipeline.issuerIdentifier(of: app)
                    let signed = try await JWSOfferSigner.signPromotionalOffer(
                        bundleIdentifier: app.bundleIdentifier,
                        productIdentifier: product.productIdentifier,
                        offerIdentifier: offerIdentifier,
                        transactionId: originalTransactionId,
                        issuerIdentifier: issuer,
                        key: key,
                        issuedAt: context.now
                    )
                    return answering(
                        .v2(signed.token),
                        record: IssuedSignature(
                            signed,
                            bundleIdentifier: app.bundleIdentifier,
                            customer: customer.applicationUsername,
                            channel: "retention",
                            requestIdentifier: requestIdentifier
                        )
                    )
                case .v1:
                    // The legacy signature covers an applicationUsername: the customer's appAccountToken when they
                    // are known by one (Apple's V1 answer carries it), else nothing.
                    let token = UUID(uuidString: customer.applicationUsername) != nil ? customer.applicationUsername : nil
                    let bundle = try OfferSigner.signLegacy(
                        PromotionalOffer(
                            bundleIdentifier: app.bundleIdentifier,
                            productIdentifier: product.productIdentifier,
                            offerIdentifier: offerIdentifier,
                            applicationUsername: token ?? "",
                            requiresApplicationUsername: false
                        ),
                        with: key,
                        timestamp: Int64((context.now.timeIntervalSince1970 * 1000).rounded(.down))
                    )
                    let signature = PromotionalOfferSignatureV1(
                        encodedSignature: bundle.signature,
                        productIdentifier: bundle.productIdentifier,
                        nonce: bundle.nonce,
                        timestamp: bundle.timestamp,
                        keyIdentifier: bundle.keyIdentifier,
                        offerIdentifier: bundle.offerIdentifier,
                        appAccountToken: token
                    )
                    return answering(
                        .v1(signature),
                        record: IssuedSignature(
                            bundle,
                            customer: customer.applicationUsername,
                            channel: "retention",
                            requestIdentifier: requestIdentifier
                        )
                    )
                }
            },
            idempotency: FlowIdempotency(
                key: "retention:\(app.bundleIdentifier):\(requestIdentifier)",
                encode: { try StoredRetentionAnswer(request: binding, answer: $0).encoded() },
                decode: { text in
                    // The stored answer is given only to the request it answered: same original transaction and
                    // product (an answer stored before answers were bound names no request, and is given to none).
                    guard let stored = try? StoredRetentionAnswer(decoding: text), stored.request == binding else {
                        throw OfferServiceError(
                            .requestIdentifierConflict,
                            """
                            This requestIdentifier was already answered for another original transaction or product; a stored answer is given \
                            only to the request it answered.
                            """
                        )
                    }
                    // An offer signed with a key revoked since (or gone) is not handed out again: the product's
                    // fallback message instead, else no answer (the App Store shows its default message).
                    if let key = stored.answer.promotionalOffer?.signingKeyIdentifier,
                        [nil, .revoked].contains(self.pipeline.keys.current.state(of: key))
                    {
                        self.logger.notice(
                            "a stored retention answer signed with a key revoked since was not given again",
                            metadata: [
                                "bundleIdentifier": "\(app.bundleIdentifier)", "keyIdentifier": "\(key)", "requestIdentifier": "\(requestIdentifier)",
                            ]
                        )
                        guard let fallback = entries.last, fallback.isFallback else {
                            throw OfferServiceError(
                                .noRetentionAnswer,
                                """
                                The answer stored for this requestIdentifier carries an offer signed with a key revoked since, and \
                                \(product.productIdentifier) has no fallback message; the App Store shows its default message.
                                """
                            )
                        }
                        return Self.retentionAnswer(fallback, signed: nil)
                    }
                    return stored.answer
                }
            )
        )
        flow.deadline = deadline
        if !known {
            // A subscription the store has never seen: the App Store's facts, filed under the customer they name.
            flow.appStoreLookup = AppStoreLookup(transactionId: originalTransactionId, owner: .answer, field: "originalTransactionId")
        }
        return try await pipeline.run(flow, now: now)
    }

    private enum RetentionSignature {
        case v1(PromotionalOfferSignatureV1)
        case v2(String)
    }

    static let answerEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    /// The response body for an entry: exactly one field set.
    private static func retentionAnswer(_ entry: OfferPolicy.RetentionEntry, signed: RetentionSignature?) -> RealtimeResponseBody {
        switch entry.answer {
        case .message:
            return RealtimeResponseBody(message: RetentionMessage(messageIdentifier: entry.messageIdentifier))
        case .alternateProduct(let productIdentifier):
            return RealtimeResponseBody(
                alternateProduct: RetentionAlternateProduct(messageIdentifier: entry.messageIdentifier, productIdentifier: productIdentifier)
            )
        case .promotionalOffer:
            var offer = RetentionPromotionalOffer(messageIdentifier: entry.messageIdentifier)
            switch signed {
            case .v1(let signature): offer.promotionalOfferSignatureV1 = signature
            case .v2(let token): offer.promotionalOfferSignatureV2 = token
            case nil: break
            }
            return RealtimeResponseBody(promotionalOffer: offer)
        }
    }

    /// Counts a live request that gets no answer and logs why, once per app and product; other errors pass.
    private func noteNoRetentionAnswer(_ error: OfferServiceError, app: AppConfiguration, productIdentifier: String) {
        guard error.code == .noRetentionAnswer else { return }
        PipelineMetrics.countRetentionAnswer("no_answer")
        let product = String(productIdentifier.prefix(PayloadField.maximumLength))
        let first = unanswered.withLock { $0.count < 1_000 && $0.insert("\(app.bundleIdentifier)/\(product)").inserted }
        guard first else { return }
        logger.warning(
            "retention requests get no answer (logged once per product)",
            metadata: [
                "bundleIdentifier": "\(app.bundleIdentifier)", "productIdentifier": "\(product)", "why": "\(error.message)",
            ]
        )
    }
}
