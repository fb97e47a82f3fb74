import Foundation
import OfferSigning

/// Which promotional-offer signature a retention answer carries.
public enum RetentionSignatureFormat: String, Sendable, Hashable, CaseIterable {
    /// The StoreKit 2 promotional offer JWS (`promotionalOfferSignatureV2`), the default.
    case v2
    /// The legacy signature (`promotionalOfferSignatureV1`: nonce, timestamp, keyIdentifier, encodedSignature).
    case v1
}

extension OfferPolicy {
    /// One entry of a product's `retention:` list: what to answer the App Store's real-time "Get Retention
    /// Message" request with, and for whom. The first entry whose rules hold wins; an entry that is neither a
    /// promotional offer nor has rules is the fallback (at most one, and last). See docs/retention.md.
    public struct RetentionEntry: Sendable {
        /// What the entry answers.
        public enum Answer: Sendable, Hashable {
            /// A text message (`message`).
            case message
            /// A switch-plan suggestion to another product of the same subscription group (`alternateProduct`).
            case alternateProduct(productIdentifier: String)
            /// A signed promotional offer of this product (`promotionalOffer`).
            case promotionalOffer(offerIdentifier: String, signature: RetentionSignatureFormat)
        }

        /// The answer.
        public var answer: Answer
        /// The message uploaded with the Retention Messaging API that the App Store shows.
        public var messageIdentifier: String
        /// The name of the app's catalogue message the entry shows (`message:`), `nil` when it names an identifier
        /// uploaded by other means (`messageIdentifier:`).
        public var messageName: String? = nil
        /// The entry's own rules (`rules:`); empty when it has none.
        public var rules: AllRules
        /// What must hold for the entry to be chosen: its own rules and, for a promotional offer, the offer's.
        public var rule: AllRules
        /// Where the entry is in the policy file, for explanations.
        public var location: String

        /// Whether the entry always holds: no rules of its own and not a promotional offer (whose own rules apply).
        public var isFallback: Bool {
            if case .promotionalOffer = answer { return false }
            return rules.rules.isEmpty
        }

        /// The offer an entry signs (empty for messages and alternate products), as rules see it.
        public var offerIdentifier: String {
            if case .promotionalOffer(let offer, _) = answer { return offer }
            return ""
        }
    }

    /// What the retention entries decide for one customer.
    public struct RetentionChoice: Sendable {
        /// Every entry looked at, in order, with its decision (entries after the chosen one are not looked at).
        public var considered: [(entry: RetentionEntry, decision: EligibilityDecision)]
        /// The position of the chosen entry, or `nil` when none holds.
        public var index: Int?

        /// The chosen entry.
        public var entry: RetentionEntry? { index.map { considered[$0].entry } }
        /// The chosen entry's decision (its grant, if the offer spends one), or a no with every reason.
        public var decision: EligibilityDecision {
            if let index { return considered[index].decision }
            return .notEligible(considered.flatMap(\.decision.reasons))
        }
    }

    /// The first of `entries` whose rules hold in `context` (each promotional offer judged as that offer:
    /// `offerIdentifier` set, so caps and cool-downs count its own signatures).
    public static func chooseRetention(_ entries: [RetentionEntry], in context: EligibilityContext) -> RetentionChoice {
        var considered: [(entry: RetentionEntry, decision: EligibilityDecision)] = []
        for entry in entries {
            var context = context
            context.offerIdentifier = entry.offerIdentifier
            let decision = entry.rule.evaluate(context)
            considered.append((entry, decision))
            if decision.isEligible { return RetentionChoice(considered: considered, index: considered.count - 1) }
        }
        return RetentionChoice(considered: considered, index: nil)
    }
}

/// A product's retention entries as one rule for the request pipeline: yes when some entry holds — which one is the
/// decision's `choice`, its grant (if any) the one spent — no with every entry's reasons otherwise
/// (``OfferPolicy/chooseRetention(_:in:)``).
public struct RetentionSelection: EligibilityRule {
    public let name = "retention"
    /// The entries, in order.
    public let entries: [OfferPolicy.RetentionEntry]

    public init(_ entries: [OfferPolicy.RetentionEntry]) { self.entries = entries }

    public var lookback: TimeInterval? { entries.compactMap(\.rule.lookback).max() }
    public var dependsOnIssuedOffers: Bool { entries.contains { $0.rule.dependsOnIssuedOffers } }

    /// Yes with the chosen entry's position in ``entries`` as the decision's `choice` (and its grant), or a no with
    /// every entry's reasons.
    public func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
        let choice = OfferPolicy.chooseRetention(entries, in: context)
        guard let index = choice.index else { return choice.decision }
        return .eligible(grant: choice.decision.grant, choice: index)
    }
}

extension OfferPolicy {
    /// Parses a product's `retention:` list once all the app's products are known (an alternate product may be
    /// listed after the product that names it).
    static func retentionEntries(
        _ node: PolicyNode,
        product: Product,
        appProducts: [String: Product],
        catalogue: RetentionCatalogue = RetentionCatalogue(),
        registry: RuleRegistry
    ) throws(PolicyError) -> [RetentionEntry] {
        var entries: [RetentionEntry] = []
        // Lookups in constant time: a candidate may list thousands of entries and offers.
        let offers = Dictionary(product.offers.map { ($0.offerIdentifier, $0) }, uniquingKeysWith: { first, _ in first })
        for entryNode in try node.list() {
            try entryNode.requireOnlyKeys([
                "promotionalOffer", "alternateProduct", "messageIdentifier", "message", "signature", "rules", "description",
            ])
            if let fallback = entries.last, fallback.isFallback {  // only ever the last: nothing may follow it
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(entryNode.location): this entry comes after the fallback (\(fallback.location)), an entry without rules that always \
                    answers, so it would never be chosen; move it up or give the fallback rules
                    """
                )
            }
            let messageName = try optional(entryNode, "message", maximumLength: 64)
            let messageIdentifier: String
            switch (messageName, entryNode["messageIdentifier"]) {
            case (.some(let name), nil):
                guard let message = catalogue.message(named: name) else {
                    throw PolicyError(.invalidPolicy, "\(entryNode.location): message \(name) is not one of the app's retentionMessages")
                }
                messageIdentifier = message.identifier
            case (.some, .some):
                throw PolicyError(
                    .invalidPolicy,
                    "\(entryNode.location): an entry names its message by message (the app's retentionMessages) or by messageIdentifier, not both"
                )
            case (nil, _):
                messageIdentifier = try required(entryNode, "messageIdentifier", maximumLength: 64).lowercased()
            }
            guard UUID(uuidString: messageIdentifier) != nil else {
                throw PolicyError(
                    .invalidPolicy,
                    """
                    \(entryNode.location): messageIdentifier must be the UUID of a message uploaded with the Retention Messaging API (for \
                    example 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f), not '\(messageIdentifier.prefix(64))'
                    """
                )
            }
            let offer = try optional(entryNode, "promotionalOffer")
            let alternate = try optional(entryNode, "alternateProduct")
            let signatureText = try optional(entryNode, "signature", maximumLength: 8)
            let answer: RetentionEntry.Answer
            var offerRule = AllRules([])
            switch (offer, alternate) {
            case (.some, .some):
                throw PolicyError(.invalidPolicy, "\(entryNode.location): an entry answers with promotionalOffer or alternateProduct, not both")
            case (.some(let offerIdentifier), nil):
                guard let found = offers[offerIdentifier] else {
                    let known = product.offers.map(\.offerIdentifier)
                    let listed = known.isEmpty ? " (it lists no offers)" : "; its offers: \(known.joined(separator: ", "))"
                    throw PolicyError(
                        .invalidPolicy,
                        """
                        \(entryNode.location): promotionalOffer '\(offerIdentifier)' is not an offer of \
                        \(product.productIdentifier)\(listed)
                        """
                    )
                }
                offerRule = found.rule
                var format = RetentionSignatureFormat.v2
                if let signatureText {
                    guard let parsed = RetentionSignatureFormat(rawValue: signatureText) else {
                        throw PolicyError(.invalidPolicy, "\(entryNode.location): signature must be v2 (the default) or v1, not '\(signatureText)'")
                    }
                    format = parsed
                }
                answer = .promotionalOffer(offerIdentifier: offerIdentifier, signature: format)
            case (nil, .some(let alternateIdentifier)):
                guard let target = appProducts[alternateIdentifier], alternateIdentifier != product.productIdentifier else {
                    throw PolicyError(
                        .invalidPolicy,
                        "\(entryNode.location): alternateProduct '\(alternateIdentifier)' must be another product of this app in the policy"
                    )
                }
                if let group = product.subscriptionGroupIdentifier, let other = target.subscriptionGroupIdentifier, group != other {
                    throw PolicyError(
                        .invalidPolicy,
                        """
                        \(entryNode.location): alternateProduct '\(alternateIdentifier)' is in subscription group \(other), not \(group); the \
                        App Store only suggests a product of the same group
                        """
                    )
                }
                answer = .alternateProduct(productIdentifier: alternateIdentifier)
            case (nil, nil):
                answer = .message
            }
            if signatureText != nil, offer == nil {
                throw PolicyError(.invalidPolicy, "\(entryNode.location): signature applies to promotionalOffer entries only")
            }
            let rules = try Self.rules(entryNode["rules"], registry: registry)
            entries.append(
                RetentionEntry(
                    answer: answer,
                    messageIdentifier: messageIdentifier,
                    messageName: messageName,
                    rules: rules,
                    rule: AllRules(rules.rules + offerRule.rules),
                    location: entryNode.location
                )
            )
        }
        return entries
    }
}
