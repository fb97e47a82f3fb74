import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    // MARK: the Retention Messaging catalogue (issue 43)

    func replaceRetentionCatalogue(bundleIdentifier: String, environment: String, with records: [RetentionCatalogueRecord]) async throws {
        try await backend.transaction { database in
            // Upserted, not deleted and inserted: two syncs of one app at once (two replicas) both succeed.
            let identifiers = records.map(\.identifier)
            var delete = database.delete(from: "retention_catalogue")
                .where("bundle_identifier", .equal, bundleIdentifier).where("environment", .equal, environment)
            if !identifiers.isEmpty { delete = delete.where("identifier", .notIn, identifiers) }
            try await delete.run()
            // In slices: a catalogue holds up to 4,000 items, and a statement takes a bounded number of values.
            for slice in stride(from: 0, to: records.count, by: 200).map({ records[$0..<min($0 + 200, records.count)] }) {
                var insert = database.insert(into: "retention_catalogue").columns(
                    "bundle_identifier",
                    "environment",
                    "kind",
                    "identifier",
                    "name",
                    "state",
                    "sent_at",
                    "checked_at"
                )
                for record in slice {
                    insert = insert.values(
                        SQLBind(bundleIdentifier),
                        SQLBind(environment),
                        SQLBind(record.kind),
                        SQLBind(record.identifier),
                        SQLBind(record.name),
                        SQLBind(record.state),
                        SQLBind(record.sentAt?.unixMilliseconds),
                        SQLBind(record.checkedAt.unixMilliseconds)
                    )
                }
                try await insert.onConflict(with: ["bundle_identifier", "environment", "kind", "identifier"]) {
                    $0.set(excludedValueOf: "name").set(excludedValueOf: "state").set(excludedValueOf: "sent_at").set(excludedValueOf: "checked_at")
                }.run()
            }
        }
    }

    func retentionCatalogue(bundleIdentifier: String, environment: String) async throws -> [RetentionCatalogueRecord] {
        struct Row: Decodable {
            var kind, identifier, name, state: String
            var sentAt: Int64?
            var checkedAt: Int64
        }
        let rows = try await backend.reading { database in
            try await database.select().columns("kind", "identifier", "name", "state", "sent_at", "checked_at").from("retention_catalogue")
                .where("bundle_identifier", .equal, bundleIdentifier).where("environment", .equal, environment)
                .orderBy("kind").orderBy("name").orderBy("identifier")
                .all(decoding: Row.self, keyDecodingStrategy: .convertFromSnakeCase)
        }
        return rows.map {
            RetentionCatalogueRecord(
                kind: $0.kind,
                identifier: $0.identifier,
                name: $0.name,
                state: $0.state,
                sentAt: $0.sentAt.map { Date(unixMilliseconds: $0) },
                checkedAt: Date(unixMilliseconds: $0.checkedAt)
            )
        }
    }
}
