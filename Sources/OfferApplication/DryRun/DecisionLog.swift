import Crypto
import Foundation
import OfferEligibility
import OfferModel
import OfferSigning
import OfferStore

/// The channel a decision was made on, as the decision log names it.
public enum DecisionChannel: String, Sendable, CaseIterable {
    /// `POST /v1/offers/sign` (a legacy promotional-offer signature).
    case legacy
    /// `POST /v1/offers/sign-jws` (a promotional offer V2 JWS).
    case jws
    /// `POST /v1/offers/introductory-eligibility` (the product's introductory-offer policy).
    case introductory
    /// The App Store's real-time retention request (the product's retention entries).
    case retention
}

/// The facts a decision was made on, as the decision log keeps them: the customer's facts without their
/// identifier and time of change, and the issued signatures inside the rule's lookback reduced to what rules read
/// (product, offer, time). Compact JSON with sorted keys, so identical snapshots hash alike and are stored once.
struct DecisionSnapshot: Codable, Sendable {
    /// One issued signature, as rules read it.
    struct Issued: Codable, Sendable {
        var productIdentifier: String
        var offerIdentifier: String
        var timestamp: Int64

        private enum CodingKeys: String, CodingKey {
            case productIdentifier = "p"
            case offerIdentifier = "o"
            case timestamp = "t"
        }
    }

    var facts: CustomerFacts
    var issued: [Issued]

    private enum CodingKeys: String, CodingKey {
        case facts = "f"
        case issued = "i"
    }

    /// The snapshot of a context: the customer's key and `updatedAt` blanked (the log names customers only by
    /// their keyed hash), the signatures since `lookback` seconds before the decision.
    init(_ context: EligibilityContext, lookback: TimeInterval?) {
        var facts = context.facts
        facts.key = CustomerKey(bundleIdentifier: context.bundleIdentifier, applicationUsername: "")
        facts.updatedAt = Date(timeIntervalSince1970: 0)
        self.facts = facts
        issued = Self.issuedSignatures(context, lookback: lookback)
    }

    /// The context's signatures since `lookback` seconds before the decision, as the snapshot keeps them.
    static func issuedSignatures(_ context: EligibilityContext, lookback: TimeInterval?) -> [Issued] {
        guard let lookback, lookback > 0 else { return [] }
        let since = Int64((context.now.timeIntervalSince1970 - lookback) * 1000)
        return context.issuedSignatures.filter { $0.timestamp >= since }.map {
            Issued(productIdentifier: $0.productIdentifier, offerIdentifier: $0.offerIdentifier, timestamp: $0.timestamp)
        }
    }

    /// The context this snapshot describes, for a decision about `productIdentifier`/`offerIdentifier` at `now`.
    func context(
        bundleIdentifier: String,
        productIdentifier: String,
        offerIdentifier: String,
        subscriptionGroupIdentifier: String?,
        now: Date
    ) -> EligibilityContext {
        EligibilityContext(
            bundleIdentifier: bundleIdentifier,
            productIdentifier: productIdentifier,
            offerIdentifier: offerIdentifier,
            subscriptionGroupIdentifier: subscriptionGroupIdentifier,
            facts: facts,
            issuedSignatures: issued.map {
                IssuedSignature(
                    nonce: "",
                    keyIdentifier: "",
                    bundleIdentifier: bundleIdentifier,
                    productIdentifier: $0.productIdentifier,
                    offerIdentifier: $0.offerIdentifier,
                    applicationUsername: "",
                    timestamp: $0.timestamp,
                    format: ""
                )
            },
            now: now
        )
    }

    func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .millisecondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    static func decode(_ text: String) throws -> DecisionSnapshot {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try decoder.decode(DecisionSnapshot.self, from: Data(text.utf8))
    }

    /// The key of a snapshot in `decision_facts`: the first 16 bytes of its SHA-256, in hex.
    static func hash(_ text: String) -> String {
        // Over the digest's bytes at once: the digest's own iteration copies it out for every byte.
        SHA256.hash(data: Data(text.utf8)).withUnsafeBytes { $0.hexString(prefix: 16) }
    }
}

extension SigningPipeline {
    /// Logs a decision made under the policy (nothing without a policy, a store or a rule): its time, channel,
    /// offer (or the chosen retention entry), the customer's keyed hash, the policy's version, the facts snapshot,
    /// the answer and the reason codes. Queued for the store's batched writer; the answer does not wait.
    /// `storedFacts`: the text the context's facts were decoded from, when the caller has it: the snapshot is made
    /// from it (``DecisionSnapshot/text(_:lookback:storedFacts:)``) instead of encoding the facts again.
    func logDecision<Output>(
        _ flow: SigningFlow<Output>,
        _ decision: EligibilityDecision,
        _ context: EligibilityContext,
        storedFacts: String? = nil
    ) {
        guard let store, let policy, let rule = flow.rule else { return }
        let lookback = rule.lookback
        let snapshot: String
        do {
            snapshot = try DecisionSnapshot.text(context, lookback: lookback, storedFacts: storedFacts)
        } catch {
            return  // facts that cannot be encoded cannot be replayed either; the answer is unaffected
        }
        var offerIdentifier = flow.offerIdentifier
        var retentionEntry: String?
        if let selection = rule as? RetentionSelection, let index = decision.choice, selection.entries.indices.contains(index) {
            offerIdentifier = selection.entries[index].offerIdentifier
            retentionEntry = selection.entries[index].messageIdentifier
        }
        // The running experiment of the slot and the customer's variant in it, as the gate assigned it: what a dry-run
        // of a candidate keeping the experiment replays (the log names the customer only by a keyed hash).
        let experiment = OfferPolicy.experiments(in: rule).first { $0.isRunning(at: context.now) }
        store.logDecision(
            PolicyDecisionRecord(
                decidedAt: Int64((context.now.timeIntervalSince1970 * 1000).rounded(.down)),
                channel: flow.channel.rawValue,
                bundleIdentifier: flow.app.bundleIdentifier,
                productIdentifier: flow.productIdentifier,
                offerIdentifier: offerIdentifier,
                retentionEntry: retentionEntry,
                customerHash: CustomerHash.of(flow.customer.applicationUsername),
                policyVersion: policy.version,
                granted: decision.isEligible,
                reasons: Self.reasonCodes(decision.reasons),
                lookbackSeconds: lookback.map { Int64(min(max($0, 0), 1e12).rounded(.up)) } ?? 0,
                factsHash: DecisionSnapshot.hash(snapshot),
                factsSnapshot: snapshot,
                experimentIdentifier: experiment?.identifier,
                experimentVariant: experiment?.variant(for: context.facts.key).name
            )
        )
    }

    /// Reasons as the log keeps them: `rule:code`, comma-separated.
    static func reasonCodes(_ reasons: [EligibilityReason]) -> String {
        reasons.map { "\($0.rule):\($0.code)" }.joined(separator: ",")
    }
}
