import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferStore
import Synchronization
import Testing

/// ``PolicyAdministration`` over in-memory fakes of its capabilities: a policy applied to the store is in force at
/// once and audited once, a dry-run is audited with its counts, and what each refuses without a store.
@Suite struct PolicyAdministrationTests {
    let documents = SharedDocumentsMemoryStore()
    let audit = AuditMemoryLog()
    let holder = PolicyHolder(PolicyInForce(policy: nil))
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let logger = Logger(label: "test")

    static func policy(cap: Int) throws -> OfferPolicy {
        try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: com.example.app
                    products:
                      - productIdentifier: monthly
                        offers:
                          - offerIdentifier: winback
                            rules: [{ cap: { count: \(cap), days: 30 } }]
                """
        )
    }

    /// A report with counts to find again in the audit.
    static var report: DryRunReport {
        var report = DryRunReport()
        (report.replayed, report.grantedToRefused, report.refusedToGranted, report.changedOffer) = (40, 3, 2, 1)
        return report
    }

    /// The use case over the fakes (`store: false`: as a service without a store), replaying with `replay`.
    func administration(
        store: Bool = true,
        replay: @escaping @Sendable (OfferPolicy, Int) async throws -> DryRunReport = { _, _ in PolicyAdministrationTests.report }
    ) -> PolicyAdministration {
        let now = self.now
        return PolicyAdministration(
            documents: store ? documents : nil,
            audit: store ? AuditTrail(log: audit) : nil,
            policies: holder,
            servedApps: ["com.example.app"],
            replay: replay,
            now: { now }
        )
    }

    @Test func anAppliedPolicyIsInForceAtOnceAndAuditedWithItsRevision() async throws {
        let policy = try Self.policy(cap: 2)
        let inForce = try await administration().apply(policy, by: "carol", via: "console", logger: logger)
        #expect(inForce.revision == 1 && inForce.policy?.version == policy.version)
        #expect(holder.current.revision == 1 && holder.current.policy?.version == policy.version)
        #expect(try await documents.document(named: StorePolicy.defaultDocumentName)?.text == policy.text)
        let events = audit.appended
        #expect(events.count == 1)
        let event = try #require(events.first)
        #expect(event.action == "policy.apply" && event.actor == "carol" && event.target == policy.version && event.at == now)
        #expect(event.details == ["revision": "1", "previousVersion": "none", "via": "console"])
    }

    @Test func theSamePolicyAppliedAgainChangesNothingAndIsNotAudited() async throws {
        let first = try Self.policy(cap: 2)
        _ = try await administration().apply(first, by: "carol", logger: logger)
        let again = try await administration().apply(first, by: "dave", logger: logger)
        #expect(again.revision == 1)
        #expect(audit.appended.count == 1)
        let second = try Self.policy(cap: 3)
        #expect(try await administration().apply(second, by: "dave", logger: logger).revision == 2)
        #expect(audit.appended.last?.details["previousVersion"] == first.version)
    }

    @Test func applyingWithoutAStoreIsRefusedAndChangesNothing() async throws {
        let policy = try Self.policy(cap: 2)
        do {
            _ = try await administration(store: false).apply(policy, by: "carol", logger: logger)
            Issue.record("applying without a store should be refused")
        } catch {
            #expect(error.code == .policyNeedsStore)
            #expect(error.message.contains("OFFER_SIGNER_DATABASE_URL") && error.message.contains("OFFER_SIGNER_POLICY"))
        }
        #expect(holder.current.revision == 0 && holder.current.policy == nil)
    }

    @Test func anAppliedPolicyStandsWhenItsAuditCannotBeWritten() async throws {
        audit.failing(true)
        let inForce = try await administration().apply(try Self.policy(cap: 2), by: "carol", logger: logger)
        #expect(inForce.revision == 1 && holder.current.revision == 1)
        #expect(audit.appended.isEmpty)
    }

    @Test func aStoreThatCannotBeReadLeavesThePolicyInForce() async throws {
        documents.failing(true)
        let policy = try Self.policy(cap: 2)
        do {
            _ = try await administration().apply(policy, by: "carol", logger: logger)
            Issue.record("an unreachable store should refuse the policy")
        } catch {
            #expect(error.code == .storeUnavailable)
        }
        #expect(holder.current.policy == nil && audit.appended.isEmpty)
    }

    @Test func aDryRunIsAuditedWithTheCandidateAndTheCounts() async throws {
        let asked = Mutex<[Int]>([])
        let candidate = try Self.policy(cap: 5)
        let report = try await administration(replay: { policy, days in
            #expect(policy.version == candidate.version)
            asked.withLock { $0.append(days) }
            return Self.report
        })
        .dryRun(candidate, days: 7, by: "alice", logger: logger)
        #expect(report.replayed == 40)
        #expect(asked.withLock { $0 } == [7])
        let event = try #require(audit.appended.first)
        #expect(event.action == "policy.dry-run" && event.actor == "alice" && event.target == candidate.version)
        #expect(
            event.details == ["days": "7", "replayed": "40", "grantedToRefused": "3", "refusedToGranted": "2", "changedOffer": "1"]
        )
        #expect(holder.current.policy == nil, "a dry-run changes nothing")
    }

    @Test func aToolsDryRunIsNotAudited() async throws {
        _ = try await administration().dryRun(try Self.policy(cap: 5), days: 30, by: nil, logger: logger)
        #expect(audit.appended.isEmpty)
    }

    @Test func aDryRunIsAnsweredWhenItsAuditCannotBeWritten() async throws {
        audit.failing(true)
        #expect(try await administration().dryRun(try Self.policy(cap: 5), days: 30, by: "alice", logger: logger).replayed == 40)
    }

    @Test func aDryRunWithoutAStoreIsRefusedBeforeAnyReplay() async throws {
        let replays = Mutex(0)
        let storeless = administration(store: false) { _, _ in
            replays.withLock { $0 += 1 }
            return Self.report
        }
        #expect(!storeless.canDryRun)
        await #expect(throws: OfferServiceError.storeUnavailable) {
            try await storeless.dryRun(try Self.policy(cap: 5), days: 30, by: "alice", logger: logger)
        }
        #expect(replays.withLock { $0 } == 0)
    }

    @Test func aRefusedReplayIsNotAudited() async throws {
        let refusal = OfferServiceError(.dryRunRunning, "busy")
        await #expect(throws: refusal) {
            try await administration { _, _ in throw refusal }.dryRun(try Self.policy(cap: 5), days: 30, by: "alice", logger: logger)
        }
        #expect(audit.appended.isEmpty)
    }

    @Test func aToolAdoptsThePolicyAppliedToTheStore() async throws {
        let file = try Self.policy(cap: 1)
        let fileHolder = PolicyHolder(PolicyInForce(policy: file))
        let tool = PolicyAdministration(
            documents: documents,
            audit: AuditTrail(log: audit),
            policies: fileHolder,
            servedApps: [],
            replay: { _, _ in Self.report }
        )
        try await tool.adoptStoredPolicy()
        #expect(tool.inForce.policy?.version == file.version, "nothing applied: the file's stays")
        let applied = try Self.policy(cap: 4)
        _ = try await administration().apply(applied, by: "carol", logger: logger)
        try await tool.adoptStoredPolicy()
        #expect(tool.inForce.policy?.version == applied.version && tool.inForce.revision == 1)
    }
}
