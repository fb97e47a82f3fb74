import Foundation
import OfferApplication
import OfferModel
import OfferStore
import Testing

/// ``CustomerView`` over in-memory fakes: the lookup by original transaction, the customer's signatures, the
/// decisions of the window (after the queued ones are written) and the outcomes asked for.
@Suite struct CustomerViewTests {
    let key = CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "user-1")
    let customers = CustomerFactsMemoryStore()
    let history = CustomerHistoryMemoryLog()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    var view: CustomerView {
        let now = self.now
        return CustomerView(customers: customers, signatures: history, decisions: history, outcomes: history, now: { now })
    }

    func decision(_ applicationUsername: String, daysAgo: Double, granted: Bool = true) -> PolicyDecisionRecord {
        PolicyDecisionRecord(
            decidedAt: Int64((now.timeIntervalSince1970 - daysAgo * 86_400) * 1000),
            channel: "app",
            bundleIdentifier: key.bundleIdentifier,
            productIdentifier: "monthly",
            offerIdentifier: "winback",
            customerHash: CustomerHash.of(applicationUsername),
            policyVersion: "v1",
            granted: granted,
            reasons: granted ? "" : "not_lapsed",
            lookbackSeconds: 0,
            factsHash: "",
            factsSnapshot: ""
        )
    }

    @Test(arguments: ["", "12a4", "-1", String(repeating: "1", count: 33), "１２３"])
    func anOriginalTransactionIsOneTo32Digits(_ originalTransactionId: String) async throws {
        let error = await #expect(throws: OfferServiceError.self) { _ = try await view.customers(withOriginalTransactionId: originalTransactionId) }
        #expect(error?.code == .invalidRequest && error?.field == "originalTransactionId")
    }

    @Test func theCustomersOfAnOriginalTransactionAreFound() async throws {
        var facts = CustomerFacts(key: key)
        facts.subscriptions = [
            SubscriptionFacts(subscriptionGroupIdentifier: "group", productIdentifier: "monthly", originalTransactionId: "2000000123", state: .active)
        ]
        customers.seed(facts)
        #expect(try await view.customers(withOriginalTransactionId: "2000000123") == [key])
        #expect(try await view.customers(withOriginalTransactionId: String(repeating: "9", count: 32)).isEmpty)
    }

    @Test func theSignaturesAreTheCustomersNewestFirst() async throws {
        for (index, username) in ["user-1", "user-2", "user-1"].enumerated() {
            try await history.record(
                IssuedSignature(
                    nonce: "n\(index)",
                    keyIdentifier: "KEY",
                    bundleIdentifier: key.bundleIdentifier,
                    productIdentifier: "monthly",
                    offerIdentifier: "winback",
                    applicationUsername: username,
                    timestamp: Int64(1_000 + index),
                    format: "legacy"
                )
            )
        }
        #expect(try await view.issuedSignatures(of: key).map(\.nonce) == ["n2", "n0"])
    }

    @Test func decisionsAreTheWindowsAfterTheQueuedOnesAreWritten() async throws {
        history.logDecision(decision("user-1", daysAgo: 1, granted: false))
        history.logDecision(decision("user-1", daysAgo: 10))
        history.logDecision(decision("user-1", daysAgo: Double(CustomerView.decisionWindowDays) + 1))
        history.logDecision(decision("user-2", daysAgo: 1))
        let decisions = try await view.decisions(of: key)
        #expect(decisions.count == 2)
        #expect(decisions.map(\.granted) == [false, true])
        #expect(decisions.first?.reasons == "not_lapsed")
    }

    @Test func outcomesAreAskedForTheCustomerAndTheirTransactions() async throws {
        _ = try await view.outcomes(of: key, originalTransactionIds: ["2000000123"])
        let query = try #require(history.outcomeQueries.first)
        #expect(query.key == key && query.originalTransactionIds == ["2000000123"] && query.limit == CustomerView.limit)
    }

    @Test func aStoreThatFailsIsStoreUnavailable() async throws {
        customers.failing(true)
        history.failing(true)
        for read in [
            { _ = try await view.facts(of: key) }, { _ = try await view.issuedSignatures(of: key) }, { _ = try await view.decisions(of: key) },
            { _ = try await view.outcomes(of: key, originalTransactionIds: []) },
            { _ = try await view.customers(withOriginalTransactionId: "1") },
        ] as [() async throws -> Void] {
            let error = await #expect(throws: OfferServiceError.self) { try await read() }
            #expect(error?.code == .storeUnavailable)
        }
    }
}
