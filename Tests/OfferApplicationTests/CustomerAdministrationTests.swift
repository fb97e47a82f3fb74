import Foundation
import Logging
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSigning
import OfferStore
import Testing

/// ``CustomerAdministration`` over in-memory fakes of its capabilities: the flag limit, grants' expiry, the
/// refresh, and the audit each change writes.
@Suite struct CustomerAdministrationTests {
    let key = CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "user-1")
    let customers = CustomerFactsMemoryStore()
    let audit = AuditMemoryLog()
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let logger = Logger(label: "test")

    func administration(
        policy: OfferPolicy? = nil,
        refresh: @escaping @Sendable (CustomerKey) async throws(OfferServiceError) -> CustomerFacts = { key in CustomerFacts(key: key) }
    ) -> CustomerAdministration {
        let now = self.now
        return CustomerAdministration(
            customers: customers,
            audit: AuditTrail(log: audit),
            policies: PolicyHolder(PolicyInForce(policy: policy)),
            appStoreRefresh: refresh,
            now: { now }
        )
    }

    /// The error a call threw, or `nil` when it returned.
    func failure(_ body: () async throws -> Void) async -> OfferServiceError? {
        do {
            try await body()
            return nil
        } catch let error as OfferServiceError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func anUnknownCustomerHasNoFacts() async throws {
        #expect(try await administration().facts(of: key) == nil)
        customers.seed(CustomerFacts(key: key, flags: ["vip": "yes"]))
        #expect(try await administration().facts(of: key)?.flags == ["vip": "yes"])
    }

    @Test func flagsAreSetRemovedAndAuditedWithTheAdmin() async throws {
        customers.seed(CustomerFacts(key: key, flags: ["old": "x"]))
        let facts = try await administration().setFlags(["vip": "yes", "old": nil], of: key, by: "alice", logger: logger)
        #expect(facts.flags == ["vip": "yes"])
        #expect(try await customers.customerFacts(for: key)?.flags == ["vip": "yes"])
        let events = audit.appended
        #expect(events.count == 1)
        #expect(events.first?.action == "customer.flags")
        #expect(events.first?.actor == "alice")
        #expect(events.first?.target == "com.example.app/user-1")
        #expect(events.first?.details == ["vip": "yes", "old": "(removed)"])
        #expect(events.first?.at == now)
    }

    @Test func aRequestOfMoreFlagsThanTheLimitIsRefusedAndWritesNothing() async throws {
        let flags = Dictionary(uniqueKeysWithValues: (0...CustomerAdministration.maximumFlags).map { ("f\($0)", String?.some("x")) })
        let error = await failure { _ = try await administration().setFlags(flags, of: key, by: "alice", logger: logger) }
        #expect(error?.code == .invalidRequest && error?.field == "flags")
        #expect(try await customers.customerFacts(for: key) == nil)
        #expect(audit.appended.isEmpty)
    }

    @Test func aCustomerAtTheLimitMayRemoveFlagsButNotAddOne() async throws {
        let full = Dictionary(uniqueKeysWithValues: (0..<CustomerAdministration.maximumFlags).map { ("f\($0)", "x") })
        customers.seed(CustomerFacts(key: key, flags: full))
        let error = await failure { _ = try await administration().setFlags(["one-more": "x"], of: key, by: "alice", logger: logger) }
        #expect(error?.code == .invalidRequest && error?.field == "flags")
        #expect(try await customers.customerFacts(for: key)?.flags == full)
        #expect(audit.appended.isEmpty)

        let facts = try await administration().setFlags(["f0": nil], of: key, by: "alice", logger: logger)
        #expect(facts.flags.count == CustomerAdministration.maximumFlags - 1)
        #expect(audit.appended.map(\.action) == ["customer.flags"])
    }

    @Test func aCustomerOverTheLimitMayStillRemoveFlags() async throws {
        let over = Dictionary(uniqueKeysWithValues: (0..<(CustomerAdministration.maximumFlags + 50)).map { ("old\($0)", "x") })
        customers.seed(CustomerFacts(key: key, flags: over))
        let facts = try await administration().setFlags(["old0": nil, "old1": nil], of: key, by: "alice", logger: logger)
        #expect(facts.flags.count == CustomerAdministration.maximumFlags + 48)
    }

    @Test(arguments: ["", "bad\u{2063}name", String(repeating: "n", count: 65)])
    func aFlagNameThatIsNotAPayloadFieldIsRefused(_ name: String) async throws {
        let error = await failure { _ = try await administration().setFlags([name: "x"], of: key, by: "alice", logger: logger) }
        #expect(error?.code == .invalidRequest && error?.field == "flags")
        #expect(error?.message.hasPrefix("Flag names are 1–64 printable characters") == true)
        #expect(audit.appended.isEmpty)
    }

    @Test func aGrantExpiresTheDaysAskedAfterNowAndIsAudited() async throws {
        let facts = try await administration().grant(
            productIdentifier: "com.example.monthly",
            offerIdentifier: "sorry_free_month",
            days: 30,
            to: key,
            by: "bob",
            logger: logger
        )
        let grant = try #require(facts.grants.first)
        #expect(facts.grants.count == 1)
        #expect(grant.expiresAt == now.addingTimeInterval(30 * 86_400))
        #expect(grant.grantedBy == "bob")
        #expect(try await customers.customerFacts(for: key)?.grants == [grant])
        let event = try #require(audit.appended.first)
        #expect(event.action == "customer.grant" && event.actor == "bob" && event.target == "com.example.app/user-1")
        #expect(
            event.details == [
                "grant": grant.id, "productIdentifier": "com.example.monthly", "offerIdentifier": "sorry_free_month", "expiresInDays": "30",
            ]
        )
    }

    @Test func aGrantWithoutDaysLastsTheDefault() async throws {
        let facts = try await administration().grant(
            productIdentifier: "p",
            offerIdentifier: "o",
            days: nil,
            to: key,
            by: "bob",
            logger: logger
        )
        #expect(facts.grants.first?.expiresAt == now.addingTimeInterval(TimeInterval(CustomerAdministration.defaultGrantDays) * 86_400))
        #expect(audit.appended.first?.details["expiresInDays"] == "\(CustomerAdministration.defaultGrantDays)")
    }

    @Test(arguments: [0, -1, 366, Int.max, Int.min])
    func aGrantOutsideOneToAYearIsRefusedAndWritesNothing(_ days: Int) async throws {
        let error = await failure {
            _ = try await administration().grant(productIdentifier: "p", offerIdentifier: "o", days: days, to: key, by: "bob", logger: logger)
        }
        #expect(error?.code == .invalidRequest && error?.field == "expiresInDays")
        #expect(try await customers.customerFacts(for: key) == nil)
        #expect(audit.appended.isEmpty)
    }

    @Test func aGrantOfAnOfferThePolicyDoesNotListIsUnknownOffer() async throws {
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: com.example.app
                    products:
                      - productIdentifier: p
                        offers:
                          - offerIdentifier: o
                            rules: [customer-service-grant]
                """
        )
        let error = await failure {
            _ = try await administration(policy: policy)
                .grant(productIdentifier: "p", offerIdentifier: "other", days: 7, to: key, by: "bob", logger: logger)
        }
        #expect(error?.code == .unknownOffer)
        #expect(try await customers.customerFacts(for: key) == nil)
        let facts = try await administration(policy: policy)
            .grant(productIdentifier: "p", offerIdentifier: "o", days: 7, to: key, by: "bob", logger: logger)
        #expect(facts.grants.map(\.offerIdentifier) == ["o"])
    }

    @Test func aMalformedProductIdentifierIsAnInvalidField() async throws {
        await #expect(throws: OfferSigningError.self) {
            _ = try await administration().grant(productIdentifier: "", offerIdentifier: "o", days: 7, to: key, by: "bob", logger: logger)
        }
        #expect(audit.appended.isEmpty)
    }

    @Test func anUnreachableStoreIsStoreUnavailable() async throws {
        customers.failing(true)
        let error = await failure { _ = try await administration().setFlags(["vip": "yes"], of: key, by: "alice", logger: logger) }
        #expect(error?.code == .storeUnavailable)
        #expect(audit.appended.isEmpty)
        let read = await failure { _ = try await administration().facts(of: key) }
        #expect(read?.code == .storeUnavailable)
    }

    @Test func anAuditThatCannotBeWrittenIsStoreUnavailable() async throws {
        audit.failing(true)
        let error = await failure { _ = try await administration().setFlags(["vip": "yes"], of: key, by: "alice", logger: logger) }
        #expect(error?.code == .storeUnavailable)
    }

    @Test func aRefreshIsAuditedWithTheSubscriptionsFound() async throws {
        let refreshed = administration { key in
            CustomerFacts(
                key: key,
                subscriptions: [
                    SubscriptionFacts(subscriptionGroupIdentifier: "1", productIdentifier: "p", originalTransactionId: "10", state: .active),
                    SubscriptionFacts(subscriptionGroupIdentifier: "2", productIdentifier: "q", originalTransactionId: "20", state: .expired),
                ]
            )
        }
        let facts = try await refreshed.refresh(key, by: "carol", logger: logger)
        #expect(facts.subscriptions.count == 2)
        let event = try #require(audit.appended.first)
        #expect(event.action == "customer.refresh" && event.actor == "carol" && event.details == ["subscriptions": "2"])
    }

    @Test func aRefreshTheAppStoreRefusesIsNotAudited() async throws {
        let refused = administration { (_: CustomerKey) async throws(OfferServiceError) -> CustomerFacts in
            throw OfferServiceError(.appStoreUnavailable, "The App Store did not answer.")
        }
        let error = await failure { _ = try await refused.refresh(key, by: "carol", logger: logger) }
        #expect(error?.code == .appStoreUnavailable)
        #expect(audit.appended.isEmpty)
    }
}
