import Foundation
import OfferEligibility
import OfferModel
import Testing

@Suite struct PolicyErrorTests {
    struct Broken: Sendable, CustomTestStringConvertible {
        let name: String
        let text: String
        let mentions: [String]
        var testDescription: String { name }
    }

    static let broken: [Broken] = [
        Broken(name: "not YAML", text: "apps: [", mentions: ["not valid YAML"]),
        Broken(name: "no apps", text: "offers: []", mentions: ["unknown key 'offers'"]),
        Broken(
            name: "unknown appStoreUnavailable",
            text: """
                appStoreUnavailable: allow
                apps:
                  - bundleIdentifier: a
                """,
            mentions: ["line 1", "appStoreUnavailable must be refuse or allow-from-store", "'allow'"]
        ),
        Broken(
            name: "unknown rule",
            text: """
                apps:
                  - bundleIdentifier: a
                    products:
                      - productIdentifier: p
                        offers:
                          - offerIdentifier: o
                            rules:
                              - lapsd: { minDays: 3 }
                """,
            mentions: ["apps[0].products[0].offers[0].rules[0]", "line 8", "unknown rule 'lapsd'", "lapsed"]
        ),
        Broken(
            name: "typo in a key",
            text: """
                apps:
                  - bundleIdentifier: a
                    products:
                      - productIdentifier: p
                        offers:
                          - offerIdentifer: o
                """,
            mentions: ["unknown key 'offerIdentifer'", "line 6"]
        ),
        Broken(
            name: "a lapsed window no one can satisfy",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{lapsed: {minDays: 300, \
                maxDays: 30}}]}]}]}]
                """,
            mentions: ["rules[0]", "minDays (300) is after maxDays (30)"]
        ),
        Broken(
            name: "a lower-case storefront",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{storefront: {allow: \
                [usa]}}]}]}]}]
                """,
            mentions: ["rules[0]", "upper-case ISO 3166-1 alpha-3", "'usa'"]
        ),
        Broken(
            name: "a storefront of two letters",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{storefront: {deny: \
                [FR]}}]}]}]}]
                """,
            mentions: ["'FR'"]
        ),
        Broken(
            name: "an active window that ends before it starts",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{active-window: {from: \
                2026-12-01, until: 2026-11-01}}]}]}]}]
                """,
            mentions: ["until is not after its from"]
        ),
        Broken(
            name: "missing offer identifier",
            text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{rules: []}]}]}]",
            mentions: ["apps[0].products[0].offers[0]", "'offerIdentifier' is required"]
        ),
        Broken(
            name: "bad parameter",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{loyalty: {minRenewals: \
                many}}]}]}]}]
                """,
            mentions: ["minRenewals", "integer"]
        ),
        Broken(
            name: "unknown parameter",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{cap: {count: 1, weeks: \
                2}}]}]}]}]
                """,
            mentions: ["unknown key 'weeks'"]
        ),
        Broken(
            name: "window beyond 100 years",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{cap: {count: 1, days: \
                9223372036854775807}}]}]}]}]
                """,
            mentions: ["'days'", "1 to 36500"]
        ),
        Broken(
            name: "count beyond a million",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{loyalty: {minRenewals: \
                99999999999}}]}]}]}]
                """,
            mentions: ["minRenewals", "1 to 1000000"]
        ),
        Broken(
            name: "bundle identifier too long",
            text: "apps: [{bundleIdentifier: \(String(repeating: "b", count: 156))}]",
            mentions: ["bundleIdentifier", "longer than 155"]
        ),
        Broken(
            name: "issuer identifier with a control character",
            text: "apps: [{bundleIdentifier: a, issuerIdentifier: \"x\\ty\"}]",
            mentions: ["issuerIdentifier", "control character", "line 1"]
        ),
        Broken(
            name: "offer identifier with an invisible character",
            text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: \"a\\u202Eb\"}]}]}]",
            mentions: ["offerIdentifier", "U+202E"]
        ),
        Broken(
            name: "cap without window",
            text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{cap: {count: 1}}]}]}]}]",
            mentions: ["cap needs a window"]
        ),
        Broken(
            name: "duplicate offer",
            text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o}, {offerIdentifier: o}]}]}]",
            mentions: ["listed twice"]
        ),
        Broken(
            name: "bad date",
            text:
                """
                apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [{active-window: {from: \
                soon}}]}]}]}]
                """,
            mentions: ["ISO 8601"]
        ),
    ]

    @Test("errors say where in the file the problem is", arguments: broken)
    func errorsPointAtThePlace(_ broken: Broken) {
        let error = #expect(throws: PolicyError.self) { try OfferPolicy(text: broken.text) }
        for mention in broken.mentions {
            #expect(error?.message.contains(mention) == true, "'\(error?.message ?? "")' should mention \(mention)")
        }
    }

    @Test("nested YAML aliases (a billion laughs) are refused at the value budget, before they are built")
    func nestedAliasesAreRefused() {
        // Nine levels of ten aliases each: 10^9 values if expanded.
        var lines = ["a0: &a0 [" + Array(repeating: "x", count: 10).joined(separator: ",") + "]"]
        for level in 1...9 {
            lines.append("a\(level): &a\(level) [" + Array(repeating: "*a\(level - 1)", count: 10).joined(separator: ",") + "]")
        }
        lines.append("apps: *a9")
        let error = #expect(throws: PolicyError.self) { try OfferPolicy(text: lines.joined(separator: "\n")) }
        #expect(error?.message.contains("more than \(PolicyNode.maximumValues) values") == true, "\(error?.message ?? "")")
    }

    @Test("a long key repeated through aliases at every level is refused at the path budget, before the paths are built")
    func longKeysThroughAliasesAreRefused() {
        // A 100 KB key, 200 levels deep: each value's path would repeat it, 2 GB of paths in all.
        var lines = ["k: &k \"" + String(repeating: "x", count: 100_000) + "\"", "l0: &l0 1"]
        for level in 1...200 { lines.append("l\(level): &l\(level) {*k : *l\(level - 1)}") }
        lines.append("apps: *l200")
        let error = #expect(throws: PolicyError.self) { try OfferPolicy(text: lines.joined(separator: "\n")) }
        #expect(error?.message.contains("nested too deep") == true, "\(error?.message.prefix(200) ?? "")")
    }

    @Test("a syntax error in a long one-line document is reported short, not with the document")
    func syntaxErrorsAreShort() {
        let keys = (0..<50_000).map { "\"k\($0)\": 1" }.joined(separator: ", ")
        let error = #expect(throws: PolicyError.self) { try OfferPolicy(text: "{\"apps\": [], \(keys), \"k1\": 2}") }
        #expect(error?.message.contains("not valid YAML or JSON") == true)
        #expect((error?.message.count ?? .max) < 2_000, "\(error?.message.count ?? 0) characters")
    }

    @Test("an alias used a few times is read as its value")
    func aliasesWithinTheBudgetAreRead() throws {
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: a
                    products:
                      - productIdentifier: p
                        offers:
                          - {offerIdentifier: first, rules: &lapsed [{lapsed: {minDays: 30, maxDays: 365}}]}
                          - {offerIdentifier: second, rules: *lapsed}
                """
        )
        #expect(policy.app("a")?.product("p")?.offers.count == 2)
    }

    @Test func aDeveloperRuleIsRegisteredInAFewLines() throws {
        struct BetaTesters: EligibilityRule {
            let name = "beta-testers"
            func evaluate(_ context: EligibilityContext) -> EligibilityDecision {
                require(context.facts.flags["beta"] == "yes", "not_beta", "Only beta testers get this offer.")
            }
        }
        var registry = RuleRegistry.builtIn
        registry.register("beta-testers") { _ in BetaTesters() }
        let policy = try OfferPolicy(
            text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [beta-testers]}]}]}]",
            registry: registry
        )
        guard case .found(_, _, let offer) = policy.lookup(bundleIdentifier: "a", productIdentifier: "p", offerIdentifier: "o") else {
            Issue.record("not found")
            return
        }
        let key = CustomerKey(bundleIdentifier: "a", applicationUsername: "u")
        let beta = EligibilityContext(
            bundleIdentifier: "a",
            productIdentifier: "p",
            offerIdentifier: "o",
            facts: CustomerFacts(key: key, flags: ["beta": "yes"])
        )
        #expect(offer.rule.evaluate(beta).isEligible)
        var other = beta
        other.facts.flags = [:]
        #expect(
            offer.rule.evaluate(other).reasons == [
                EligibilityReason(rule: "beta-testers", code: "not_beta", message: "Only beta testers get this offer.")
            ]
        )
        #expect(throws: PolicyError.self) {
            try OfferPolicy(
                text: "apps: [{bundleIdentifier: a, products: [{productIdentifier: p, offers: [{offerIdentifier: o, rules: [beta-testers]}]}]}]"
            )
        }
    }
}
