import Foundation

/// What the store knows of one item of an app's Retention Messaging catalogue at Apple: an image or a message this
/// service uploaded (or found there), its approval state as Apple last said, and when it was sent. Kept by
/// `offer-signer retention sync` and `retention status` (``OfferStore/replaceRetentionCatalogue(bundleIdentifier:environment:with:)``).
public struct RetentionCatalogueRecord: Sendable, Hashable {
    /// `image` or `message`.
    public var kind: String
    /// The identifier it is uploaded under (a lower-case UUID).
    public var identifier: String
    /// Its name in the policy (a message's name, an image's file), empty for an item the policy does not declare.
    public var name: String
    /// Apple's state: `PENDING`, `APPROVED`, `REJECTED`; `NOT_SENT` when Apple does not have it.
    public var state: String
    /// When this service uploaded it, `nil` when it found it at Apple.
    public var sentAt: Date?
    /// When Apple's state was last read.
    public var checkedAt: Date

    public init(kind: String, identifier: String, name: String, state: String, sentAt: Date?, checkedAt: Date) {
        self.kind = kind
        self.identifier = identifier
        self.name = name
        self.state = state
        self.sentAt = sentAt
        self.checkedAt = checkedAt
    }
}
