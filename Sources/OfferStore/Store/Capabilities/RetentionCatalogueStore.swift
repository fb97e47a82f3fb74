import OfferModel

/// What the store knows of each app's Retention Messaging catalogue.
public protocol RetentionCatalogueStore: Sendable {
    /// Replaces what the store knows of an app's Retention Messaging catalogue in one environment (``RetentionCatalogueRecord``).
    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws

    /// What the store knows of an app's Retention Messaging catalogue in one environment, by kind and name.
    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord]
}
