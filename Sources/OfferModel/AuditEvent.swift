import Foundation

/// One audited action: an admin's change, or a customer-service grant.
public struct AuditEvent: Sendable, Hashable, Codable {
    /// A unique identifier.
    public var id: String
    /// When.
    public var at: Date
    /// Who (an admin's token name).
    public var actor: String
    /// What (`key.activate`, `customer.flag`, `customer.grant`, …).
    public var action: String
    /// On what (a key identifier, a customer key).
    public var target: String
    /// Details, never secrets.
    public var details: [String: String]

    /// Creates an event.
    public init(
        id: String = UUID().uuidString.lowercased(),
        at: Date = Date(),
        actor: String,
        action: String,
        target: String,
        details: [String: String] = [:]
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.action = action
        self.target = target
        self.details = details
    }
}
