import Foundation
import Logging
import OfferApplication
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Testing

/// ``KeyAdministration`` over a real key manager (keys in memory) and an in-memory fake of the audit log: each
/// change of a key's state is made, served and audited; an audit that cannot be written never undoes a change.
@Suite struct KeyAdministrationTests {
    let audit = AuditMemoryLog()
    let logger = Logger(label: "test")

    func administration(audited: Bool = true, counts: [String: Int] = [:]) async throws -> KeyAdministration {
        let entries = try ["KEY0000001", "KEY0000002"].map { KeyRing.Entry(key: try SigningKey.generate(keyIdentifier: $0), source: "memory") }
        let manager = try await KeyManager(
            holder: KeyRingHolder(try KeyRing(keys: entries, activeKeyIdentifier: "KEY0000001")),
            loadKeys: { entries },
            configuredActiveKeyIdentifier: "KEY0000001",
            stateStore: InMemoryKeyStateStore(),
            logger: logger
        )
        return KeyAdministration(manager: manager, audit: audited ? audit : nil, signatureCounts: { counts })
    }

    @Test func activatingAKeyServesItAndAuditsTheAdmin() async throws {
        let keys = try await administration()
        let ring = try await keys.change(.activate, keyIdentifier: "KEY0000002", by: "alice", logger: logger)
        #expect(ring.activeKeyIdentifier == "KEY0000002")
        #expect(await keys.keyRing.activeKeyIdentifier == "KEY0000002")
        let event = try #require(audit.appended.first)
        #expect(audit.appended.count == 1)
        #expect(event.action == "key.activate" && event.actor == "alice" && event.target == "KEY0000002")
    }

    @Test func retiringAndRevokingAreAuditedAsTheirAction() async throws {
        let keys = try await administration()
        _ = try await keys.change(.retire, keyIdentifier: "KEY0000002", by: "alice", logger: logger)
        let ring = try await keys.change(.revoke, keyIdentifier: "KEY0000002", by: "bob", logger: logger)
        #expect(ring.state(of: "KEY0000002") == .revoked)
        #expect(audit.appended.map(\.action) == ["key.retire", "key.revoke"])
        #expect(audit.appended.map(\.actor) == ["alice", "bob"])
    }

    @Test func aChangeFromTheConsoleSaysSoInItsAudit() async throws {
        let keys = try await administration()
        _ = try await keys.change(.retire, keyIdentifier: "KEY0000002", by: "alice", via: "console", logger: logger)
        _ = try await keys.change(.activate, keyIdentifier: "KEY0000002", by: "alice", logger: logger)
        #expect(audit.appended.map(\.details) == [["via": "console"], [:]])
    }

    @Test func aChangeTheManagerRefusesIsNotAudited() async throws {
        let keys = try await administration()
        await #expect(throws: KeyManagementError.self) {
            _ = try await keys.change(.activate, keyIdentifier: "NOSUCHKEY1", by: "alice", logger: logger)
        }
        #expect(audit.appended.isEmpty)
    }

    @Test func anAuditThatCannotBeWrittenDoesNotUndoTheChange() async throws {
        let keys = try await administration()
        audit.failing(true)
        let ring = try await keys.change(.activate, keyIdentifier: "KEY0000002", by: "alice", logger: logger)
        #expect(ring.activeKeyIdentifier == "KEY0000002")
        #expect(audit.appended.isEmpty)
    }

    @Test func withoutAnAuditLogChangesStillServe() async throws {
        let keys = try await administration(audited: false)
        let ring = try await keys.change(.activate, keyIdentifier: "KEY0000002", by: "alice", logger: logger)
        #expect(ring.activeKeyIdentifier == "KEY0000002")
        #expect(audit.appended.isEmpty)
    }

    @Test func aReloadIsNotAnAuditEventAndCountsAreThisProcesss() async throws {
        let keys = try await administration(counts: ["KEY0000001": 3])
        let ring = try await keys.reload(by: "alice", logger: logger)
        #expect(ring.entries.map(\.key.keyIdentifier).sorted() == ["KEY0000001", "KEY0000002"])
        #expect(audit.appended.isEmpty)
        #expect(keys.signatureCountsByKey == ["KEY0000001": 3])
    }
}
