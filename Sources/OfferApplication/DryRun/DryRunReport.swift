import Foundation

/// What replaying the decision log under a candidate policy found (`offer-signer policy dry-run`,
/// `POST /admin/policy/dry-run`; docs/policy.md "Dry-run"). Every replayed decision is counted once: unchanged,
/// granted → refused, refused → granted, or granted both times with another offer or retention entry.
public struct DryRunReport: Codable, Sendable, Hashable {
    /// The changes of one offer.
    public struct OfferChanges: Codable, Sendable, Hashable {
        public var productIdentifier: String
        public var offerIdentifier: String
        public var grantedToRefused: Int
        public var refusedToGranted: Int

        public init(productIdentifier: String, offerIdentifier: String, grantedToRefused: Int, refusedToGranted: Int) {
            self.productIdentifier = productIdentifier
            self.offerIdentifier = offerIdentifier
            self.grantedToRefused = grantedToRefused
            self.refusedToGranted = refusedToGranted
        }

        private enum CodingKeys: String, CodingKey {
            case productIdentifier = "productId"
            case offerIdentifier, grantedToRefused, refusedToGranted
        }
    }

    /// One side of a changed decision.
    public struct Answer: Codable, Sendable, Hashable {
        public var granted: Bool
        /// The offer (or the offer of the chosen retention entry); empty for none.
        public var offerIdentifier: String
        /// The chosen retention entry's message identifier, for retention.
        public var retentionEntry: String?
        /// The reason codes of a no (`rule:code`).
        public var reasons: [String]
    }

    /// A changed decision, the customer as the log's keyed hash.
    public struct Example: Codable, Sendable, Hashable {
        public var decidedAt: Date
        public var channel: String
        public var customerHash: String
        public var productIdentifier: String
        public var offerIdentifier: String
        public var before: Answer
        public var after: Answer

        private enum CodingKeys: String, CodingKey {
            case decidedAt, channel, customerHash
            case productIdentifier = "productId"
            case offerIdentifier, before, after
        }
    }

    /// Signatures a day the decisions made, and would make under the candidate.
    public struct SignaturesPerDay: Codable, Sendable, Hashable {
        public var before: Double
        public var after: Double
        public var change: Double

        public init(before: Double, after: Double, change: Double) {
            self.before = before
            self.after = after
            self.change = change
        }
    }

    /// The window's decisions that were not decided again, by why (none of them is in the other counts).
    public struct NotReplayed: Codable, Sendable, Hashable {
        /// Their facts could not be read back (a snapshot that no longer decodes, a channel this release does not know).
        public var unreadable: Int
        /// Made while one of the candidate's experiments ran, without the variant it gave them: logged before the log
        /// kept each decision's variant (store schema 18), or under another experiment of the same offer.
        public var withoutExperimentVariant: Int

        public init(unreadable: Int = 0, withoutExperimentVariant: Int = 0) {
            (self.unreadable, self.withoutExperimentVariant) = (unreadable, withoutExperimentVariant)
        }
    }

    public var replayed = 0
    public var notReplayed = NotReplayed()
    public var unchanged = 0
    public var grantedToRefused = 0
    public var refusedToGranted = 0
    public var changedOffer = 0
    public var byOffer: [OfferChanges] = []
    public var examples: [Example] = []
    public var signaturesPerDay = SignaturesPerDay(before: 0, after: 0, change: 0)

    /// The most examples an answer carries.
    public static let maximumExamples = 10

    public init() {}
}
