import Foundation
import OfferEligibility
import OfferModel
import Testing

/// `experiments:` in the policy: what `policy check` refuses, and the gate each experiment puts on its offers.
@Suite struct ExperimentPolicyTests {
    static func policy(_ experiments: String, extraOffers: String = "") -> String {
        """
        apps:
          - bundleIdentifier: com.example.app
            products:
              - productIdentifier: monthly
                offers:
                  - offerIdentifier: half_off
                  - offerIdentifier: free_month
                  - offerIdentifier: sorry
        \(extraOffers)
                retention:
                  - promotionalOffer: half_off
                    messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01
                  - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02
                    rules: [active-subscriber]
                  - messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03
        experiments:
        \(experiments)
        """
    }

    static let winback = """
          - id: winback-2026
            productIdentifier: monthly
            variants:
              - { name: half, offerIdentifier: half_off, weight: 1 }
              - { name: free, offerIdentifier: free_month, weight: 1 }
              - { name: none, holdout: true, weight: 1 }
        """

    private func eligible(_ policy: OfferPolicy, _ customer: String, at now: Date = Date()) -> [String] {
        let product = policy.app("com.example.app")!.product("monthly")!
        return product.offers.filter { offer in
            offer.rule.evaluate(
                EligibilityContext(
                    bundleIdentifier: "com.example.app",
                    productIdentifier: "monthly",
                    offerIdentifier: offer.offerIdentifier,
                    facts: CustomerFacts(key: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: customer)),
                    now: now
                )
            ).isEligible
        }.map(\.offerIdentifier)
    }

    @Test("each customer gets their variant's offer and no other of the slot; the holdout none; offers outside the slot are untouched")
    func gate() throws {
        let policy = try OfferPolicy(text: Self.policy(Self.winback))
        let experiment = try #require(policy.experiment("winback-2026"))
        var counts: [String: Int] = [:]
        for index in 0..<3_000 {
            let customer = "user-\(index)"
            let variant = experiment.variant(for: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: customer))
            counts[variant.name, default: 0] += 1
            #expect(eligible(policy, customer) == (variant.answer.map { [$0] } ?? []) + ["sorry"])
        }
        // 1,000 expected each; 3 standard deviations are about 78.
        for name in ["half", "free", "none"] { #expect(abs(counts[name, default: 0] - 1_000) < 80, "\(counts)") }
    }

    @Test("sticky: the same variant after re-reading the policy, whatever the case of the customer's name; reasons say why")
    func sticky() throws {
        let first = try OfferPolicy(text: Self.policy(Self.winback))
        let again = try OfferPolicy(text: Self.policy(Self.winback))
        for index in 0..<200 {
            #expect(eligible(first, "User-\(index)") == eligible(again, "user-\(index)"))
        }
        let product = try #require(first.app("com.example.app")?.product("monthly"))
        let experiment = try #require(first.experiment("winback-2026"))
        let held = (0..<100).map { "user-\($0)" }.first {
            experiment.variant(for: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: $0)).isHoldout
        }!
        let decision = try #require(product.offer("half_off")).rule.evaluate(
            EligibilityContext(
                bundleIdentifier: "com.example.app",
                productIdentifier: "monthly",
                offerIdentifier: "half_off",
                facts: CustomerFacts(key: CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: held))
            )
        )
        #expect(decision.reasons.map(\.code) == ["experiment_holdout"])
    }

    @Test("outside its start and end the offers are decided by their own rules alone")
    func window() throws {
        let timed = Self.winback + "\n    start: 2026-01-01\n    end: 2026-02-01"
        let policy = try OfferPolicy(text: Self.policy(timed))
        let december = ISO8601DateFormatter().date(from: "2025-12-15T00:00:00Z")!
        let january = ISO8601DateFormatter().date(from: "2026-01-15T00:00:00Z")!
        let march = ISO8601DateFormatter().date(from: "2026-03-01T00:00:00Z")!
        for customer in ["a", "b", "c", "d"] {
            #expect(eligible(policy, customer, at: december) == ["half_off", "free_month", "sorry"])
            #expect(eligible(policy, customer, at: march) == ["half_off", "free_month", "sorry"])
            #expect(eligible(policy, customer, at: january).count <= 2)
        }
    }

    @Test("a retention experiment gates the entries it names; its holdout falls through to the entries no variant names, then the fallback")
    func retention() throws {
        let text = Self.policy(
            """
              - id: save-2026
                productIdentifier: monthly
                channel: retention
                variants:
                  - { name: offer, messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01, weight: 1 }
                  - { name: none, holdout: true, weight: 1 }
            """
        )
        let policy = try OfferPolicy(text: text)
        let product = try #require(policy.app("com.example.app")?.product("monthly"))
        let experiment = try #require(policy.experiment(bundleIdentifier: "com.example.app", productIdentifier: "monthly", channel: .retention))
        var seen: Set<String> = []
        for index in 0..<100 {
            let key = CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "otid:\(1_000 + index)")
            let context = EligibilityContext(
                bundleIdentifier: "com.example.app",
                productIdentifier: "monthly",
                offerIdentifier: "",
                facts: CustomerFacts(key: key)
            )
            let chosen = OfferPolicy.chooseRetention(product.retention, in: context).entry?.messageIdentifier
            #expect(
                chosen == (experiment.variant(for: key).isHoldout ? "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03" : "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01")
            )
            seen.insert(chosen ?? "")
        }
        #expect(seen == ["5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01", "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03"])
        // An entry no variant names is not touched: an active subscriber in the holdout gets it, as experiments.md says.
        for index in 0..<100 {
            let key = CustomerKey(bundleIdentifier: "com.example.app", applicationUsername: "otid:\(2_000 + index)")
            var facts = CustomerFacts(key: key)
            facts.subscriptions = [SubscriptionFacts(subscriptionGroupIdentifier: "g", productIdentifier: "monthly", state: .active)]
            let context = EligibilityContext(bundleIdentifier: "com.example.app", productIdentifier: "monthly", offerIdentifier: "", facts: facts)
            let chosen = OfferPolicy.chooseRetention(product.retention, in: context).entry?.messageIdentifier
            #expect(
                chosen == (experiment.variant(for: key).isHoldout ? "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02" : "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e01")
            )
        }
    }

    @Test(
        "policy check refuses what would make the split or the answers ambiguous",
        arguments: [
            (
                "      - { name: a, offerIdentifier: half_off, weight: 0 }\n      - { name: b, offerIdentifier: free_month, weight: 1 }",
                "'weight' of rule variant a must be an integer from 1"
            ),
            (
                "      - { name: a, offerIdentifier: nope, weight: 1 }\n      - { name: b, offerIdentifier: free_month, weight: 1 }",
                "names offer nope, which monthly does not list"
            ),
            ("      - { name: a, holdout: true, weight: 1 }\n      - { name: b, holdout: true, weight: 1 }", "two holdouts"),
            (
                "      - { name: a, offerIdentifier: half_off, weight: 1 }\n      - { name: a, offerIdentifier: free_month, weight: 1 }",
                "two variants named a"
            ),
            (
                "      - { name: a, offerIdentifier: half_off, weight: 1 }\n      - { name: b, offerIdentifier: half_off, weight: 1 }",
                "each variant gives its own"
            ),
            ("      - { name: a, offerIdentifier: half_off, weight: 1 }", "at least two variants"),
            (
                """
                      - { name: a, holdout: true, offerIdentifier: half_off, weight: 1 }\n      - { name: b, \
                offerIdentifier: free_month, weight: 1 }
                """,
                "gives nothing"
            ),
        ]
    )
    func refused(_ variants: String, _ message: String) {
        let text = Self.policy("  - id: x\n    productIdentifier: monthly\n    variants:\n" + variants)
        #expect(throws: PolicyError.self) { try OfferPolicy(text: text) }
        do {
            _ = try OfferPolicy(text: text)
        } catch {
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    @Test("one experiment per slot, known channels and metrics, a fallback is never a variant")
    func slots() {
        let twice = Self.winback + "\n" + Self.winback.replacingOccurrences(of: "winback-2026", with: "other")
        let messages: [(String, String)] = [
            (Self.policy(twice), "one experiment per slot"),
            (
                Self.policy(
                    Self.winback.replacingOccurrences(of: "productIdentifier: monthly", with: "productIdentifier: monthly\n    channel: web")
                ), "channel must be app"
            ),
            (
                Self.policy(
                    Self.winback.replacingOccurrences(of: "productIdentifier: monthly", with: "productIdentifier: monthly\n    metric: clicks")
                ), "metric must be"
            ),
            (
                Self.policy(
                    """
                      - id: r\n    productIdentifier: monthly\n    channel: retention\n    variants:\n      - { name: \
                    a, messageIdentifier: 5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03, weight: 1 }\n      - { name: b, \
                    holdout: true, weight: 1 }
                    """
                ), "fallback message"
            ),
            (Self.policy("  - id: bad id\n    productIdentifier: monthly\n    variants: []"), "letters, digits"),
        ]
        for (text, message) in messages {
            do {
                _ = try OfferPolicy(text: text)
                Issue.record("accepted: \(message)")
            } catch {
                #expect(error.message.contains(message), "\(error.message)")
            }
        }
    }
}
