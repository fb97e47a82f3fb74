import AppStoreNotifications
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferEligibility
import OfferKeys
import OfferModel
import OfferSigning
import OfferStore
import Testing

@testable import OfferApplication
@testable import OfferSignerServer

/// A known history of decisions made through the service, then dry-runs of candidates against it
/// (docs/policy.md "Dry-run").
///
/// The history, under ``DryRunHistory/logged``: customers c1–c4 are flagged `churnRisk: high`, c5–c7 `medium`,
/// c8 not at all. Each asks for `winback` once (c1–c4 granted, c5–c8 refused: churn risk); c1 asks twice more
/// (granted: the cap is 2 in 30 days; then refused: cap reached); c1 and c5 ask for `welcome` (granted). Twelve
/// decisions, seven granted.
struct DryRunHistory {
    static let product = "com.example.monthly"
    let bundle = "com.example.dryrun-\(UUID().uuidString.prefix(8).lowercased())"
    let store: any OfferStore
    let service: SigningPipeline

    func policy(winback: String, welcome: Bool = true) -> String {
        """
        apps:
          - bundleIdentifier: \(bundle)
            products:
              - productIdentifier: \(Self.product)
                offers:
                  - offerIdentifier: winback
                    rules: \(winback)
        \(welcome ? "          - offerIdentifier: welcome" : "")
        """
    }

    var logged: String { policy(winback: "[{ churn-risk: { values: [high] } }, { cap: { count: 2, days: 30 } }]") }
    var looser: String { policy(winback: "[{ churn-risk: { values: [high, medium] } }, { cap: { count: 3, days: 30 } }]") }
    var stricter: String { policy(winback: "[{ churn-risk: { values: [high] } }, { cap: { count: 1, days: 30 } }]", welcome: false) }

    init(_ backend: StoreBackend) async throws {
        store = try await backend.open()
        let policy = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    products:
                      - productIdentifier: \(Self.product)
                        offers:
                          - offerIdentifier: winback
                            rules: [{ churn-risk: { values: [high] } }, { cap: { count: 2, days: 30 } }]
                          - offerIdentifier: welcome
                """
        )
        service = SigningPipeline(
            apps: [],
            keyRing: try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")]),
            policy: policy,
            store: store
        )
    }

    /// Makes the twelve decisions.
    func make() async throws {
        for (index, risk) in ["high", "high", "high", "high", "medium", "medium", "medium", nil].enumerated() {
            let key = CustomerKey(bundleIdentifier: bundle, applicationUsername: "dry-customer-\(index + 1)")
            try await store.updateCustomer(key) { $0.flags["churnRisk"] = risk }
        }
        var granted = 0
        for customer in ["c1", "c1", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"] {
            granted += try await ask("winback", customer) ? 1 : 0
        }
        for customer in ["c1", "c5"] { granted += try await ask("welcome", customer) ? 1 : 0 }
        #expect(granted == 7)
        await store.flushDecisionLog()
    }

    func ask(_ offer: String, _ customer: String) async throws -> Bool {
        do {
            _ = try await service.signing.signLegacy(
                SignOfferRequest(
                    bundleIdentifier: bundle,
                    productIdentifier: Self.product,
                    offerIdentifier: offer,
                    applicationUsername: customer.replacingOccurrences(of: "c", with: "dry-customer-")
                )
            )
            return true
        } catch let error as OfferServiceError where error.code == .notEligible {
            return false
        }
    }

    func dryRun(_ yaml: String, days: Int = 30) async throws -> DryRunReport {
        try await PolicyDryRun(store: store, candidate: try OfferPolicy(text: yaml)).run(days: days)
    }
}

@Suite struct PolicyDryRunTests {
    @Test("a looser candidate grants four refusals (three medium churn risks, one cap) and changes nothing else", arguments: StoreBackend.available)
    func looserCandidate(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let report = try await history.dryRun(history.looser)
        #expect(report.replayed == 12)
        #expect(report.unchanged == 8)
        #expect(report.refusedToGranted == 4)
        #expect(report.grantedToRefused == 0)
        #expect(report.changedOffer == 0)
        #expect(
            report.byOffer == [.init(productIdentifier: DryRunHistory.product, offerIdentifier: "winback", grantedToRefused: 0, refusedToGranted: 4)]
        )
        #expect(report.examples.count == 4)
        #expect(report.examples.allSatisfy { !$0.before.granted && $0.after.granted && $0.customerHash.count == 12 })
        #expect(report.signaturesPerDay == .init(before: 0.23, after: 0.37, change: 0.13))
        try await history.store.close()
    }

    @Test("a stricter candidate refuses c1's second win-back and both welcome offers it no longer lists", arguments: StoreBackend.available)
    func stricterCandidate(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let report = try await history.dryRun(history.stricter)
        #expect(report.replayed == 12)
        #expect(report.unchanged == 9)
        #expect(report.grantedToRefused == 3)
        #expect(report.refusedToGranted == 0)
        #expect(
            report.byOffer == [
                .init(productIdentifier: DryRunHistory.product, offerIdentifier: "welcome", grantedToRefused: 2, refusedToGranted: 0),
                .init(productIdentifier: DryRunHistory.product, offerIdentifier: "winback", grantedToRefused: 1, refusedToGranted: 0),
            ]
        )
        #expect(report.examples.contains { $0.after.reasons == ["policy:unknown_offer"] })
        // The logged policy itself changes nothing.
        let same = try await history.dryRun(history.logged)
        #expect(same.replayed == 12 && same.unchanged == 12)
        try await history.store.close()
    }

    @Test(
        "a candidate looking back further than the log kept, or reading the customer's identifier, is refused naming the rule",
        arguments: StoreBackend.available
    )
    func candidateNeedingFactsTheLogLacks(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let longer = history.policy(winback: "[{ cap: { count: 2, days: 60 } }]")
        let error = await #expect(throws: OfferServiceError.self) { try await history.dryRun(longer) }
        #expect(error?.code == .dryRunNeedsFacts)
        #expect(error?.message.contains("cap (looks back 60 days") == true)
        let identifiers = history.policy(winback: "[{ customers: { deny: [c1] } }]")
        let refused = await #expect(throws: OfferServiceError.self) { try await history.dryRun(identifiers) }
        #expect(refused?.message.contains("customers") == true)
        try await history.store.close()
    }

    @Test(
        "the log names customers by their keyed hash and the policy by the SHA-256 of its text; without a policy nothing is logged",
        arguments: StoreBackend.available
    )
    func whatIsLogged(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1
        let decisions = try await history.store.policyDecisions(
            bundleIdentifiers: [history.bundle],
            since: now - 3_600_000,
            until: now,
            after: nil,
            limit: 100
        )
        #expect(decisions.count == 12)
        #expect(
            decisions.allSatisfy { $0.policyVersion == history.service.policy?.version && $0.policyVersion.count == 64 && $0.channel == "legacy" }
        )
        // Each decision keeps its snapshot in its row; identical snapshots share their hash.
        #expect(decisions.allSatisfy { !$0.factsSnapshot.isEmpty && DecisionSnapshot.hash($0.factsSnapshot) == $0.factsHash })
        let snapshots = Dictionary(decisions.map { ($0.factsHash, $0.factsSnapshot) }, uniquingKeysWith: { first, _ in first })
        #expect(!snapshots.isEmpty && snapshots.count < decisions.count)
        #expect(snapshots.values.allSatisfy { !$0.contains("dry-customer") && $0.contains("\"flags\"") })
        #expect(snapshots.values.filter { $0.contains("churnRisk") }.count == snapshots.count - 1)  // all but c8's
        #expect(decisions.allSatisfy { !$0.customerHash.contains("dry-customer") })
        #expect(decisions.filter { $0.customerHash == CustomerHash.of("dry-customer-1") }.count == 4)
        #expect(Set(decisions.map(\.customerHash)).count == 8)
        #expect(decisions.filter { !$0.granted }.map(\.reasons).contains("cap:cap_reached"))
        // The same service without a policy signs, and logs nothing.
        let open = SigningPipeline(
            apps: [AppConfiguration(bundleIdentifier: history.bundle)],
            keyRing: history.service.keys.current,
            store: history.store
        )
        _ = try await open.signing.signLegacy(
            SignOfferRequest(
                bundleIdentifier: history.bundle,
                productIdentifier: DryRunHistory.product,
                offerIdentifier: "welcome",
                applicationUsername: "c9"
            )
        )
        await history.store.flushDecisionLog()
        #expect(
            try await history.store.policyDecisions(
                bundleIdentifiers: [history.bundle],
                since: now - 3_600_000,
                until: now + 60_000,
                after: nil,
                limit: 100
            ).count == 12
        )
        // The purge drops what is older than the cut-off (on the test's own SQLite file: PostgreSQL is shared by
        // the suites running at the same time).
        if backend == .sqlite {
            #expect(try await history.store.purgeDecisionLog(before: Date().addingTimeInterval(-3_600)) == 0)
            #expect(try await history.store.purgeDecisionLog(before: Date().addingTimeInterval(60)) == 12)
            #expect(try await history.dryRun(history.looser).replayed == 0)
        }
        try await history.store.close()
    }
}

@Suite struct AdminPolicyDryRunRouteTests {
    static let token = "0123456789abcdef0123"

    func router(_ history: DryRunHistory) throws -> Router<OfferSignerRequestContext> {
        buildRouter(
            useCases: OfferSignerUseCases(pipeline: history.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "carol:\(Self.token)")
        )
    }

    func post(_ client: some TestClientProtocol, _ uri: String, _ body: String, token: String? = Self.token) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/yaml"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: body))
    }

    @Test("POST /admin/policy/dry-run answers the counts, audited; without an admin token it is refused", arguments: StoreBackend.available)
    func dryRunOverHTTP(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            #expect(try await post(client, "/admin/policy/dry-run", history.looser, token: nil).status == .unauthorized)
            #expect(try await post(client, "/admin/policy/dry-run", history.looser, token: "not-the-token-0123456789").status != .ok)
            let response = try await post(client, "/admin/policy/dry-run?days=7", history.looser)
            #expect(response.status == .ok)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            #expect(answer["replayed"] as? Int == 12)
            #expect(answer["refusedToGranted"] as? Int == 4)
            #expect(answer["unchanged"] as? Int == 8)
            let byOffer = try #require(answer["byOffer"] as? [[String: Any]])
            #expect(byOffer.first?["productId"] as? String == DryRunHistory.product)
            #expect(byOffer.first?["offerIdentifier"] as? String == "winback")
            let perDay = try #require(answer["signaturesPerDay"] as? [String: Any])
            #expect((perDay["before"] as? NSNumber)?.doubleValue == 1)
            #expect(!response.text.contains("dry-customer"))
        }
        let audit = try await history.store.auditEvents(limit: 1000, since: Date().addingTimeInterval(-600))
        #expect(audit.contains { $0.action == "policy.dry-run" && $0.actor == "carol" && $0.details["refusedToGranted"] == "4" })
        try await history.store.close()
    }

    @Test("an invalid candidate is a 400 with policy check's message; bad days and missing facts are refused too", arguments: StoreBackend.available)
    func invalidCandidates(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let invalid = history.policy(winback: "[{ cap: { count: 0, days: 30 } }]")
        let expected: String
        do {
            _ = try OfferPolicy(text: invalid)
            Issue.record("the candidate should be invalid")
            return
        } catch {
            expected = error.message
        }
        try await Application(router: try router(history), logger: Logger(label: "test")).test(.router) { client in
            let response = try await post(client, "/admin/policy/dry-run", invalid)
            #expect(response.status == .badRequest)
            let body = try response.decode(ErrorBody.self)
            #expect(body.error.code == "invalid_policy")
            #expect(body.error.message == expected)
            #expect(try await post(client, "/admin/policy/dry-run", "apps: [").status == .badRequest)
            for days in ["0", "3651", "x", "99999999999999999999"] {
                let refused = try await post(client, "/admin/policy/dry-run?days=\(days)", history.looser)
                #expect(refused.status == .badRequest)
                #expect(try refused.decode(ErrorBody.self).error.field == "days")
            }
            let needsFacts = try await post(client, "/admin/policy/dry-run", history.policy(winback: "[{ cool-down: { days: 45 } }]"))
            #expect(needsFacts.status == .unprocessableContent)
            #expect(try needsFacts.decode(ErrorBody.self).error.code == "dry_run_needs_facts")
        }
        try await history.store.close()
    }
}

/// The introductory-offer and retention channels, replayed from decisions logged as the service logs them.
@Suite struct DryRunChannelTests {
    static let fallback = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
    static let offerMessage = "9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f"

    /// A snapshot as the service writes it: an active subscription in group 21000001, auto-renew off, that had its
    /// introductory offer.
    static func snapshot(bundle: String) -> String {
        """
        {"f":{"flags":{},"grants":[],"key":{"applicationUsername":"","bundleIdentifier":"\(bundle)"},"subscriptions":[\
        {"autoRenewEnabled":false,"downgraded":false,"hadIntroductoryOffer":true,"productIdentifier":"com.example.monthly",\
        "renewalCount":2,"state":"active","subscriptionGroupIdentifier":"21000001"}],"updatedAt":0},"i":[]}
        """
    }

    @Test(
        "an introductory yes becomes a no (still a signed answer); a retention message becomes the offer entry (changedOffer, one more signature)",
        arguments: StoreBackend.available
    )
    func introductoryAndRetention(_ backend: StoreBackend) async throws {
        let store = try await backend.open()
        let bundle = "com.example.channels-\(UUID().uuidString.prefix(8).lowercased())"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let snapshot = Self.snapshot(bundle: bundle)
        func record(_ channel: String, offer: String, entry: String?, at offset: Int64) -> PolicyDecisionRecord {
            PolicyDecisionRecord(
                decidedAt: now - offset,
                channel: channel,
                bundleIdentifier: bundle,
                productIdentifier: "com.example.monthly",
                offerIdentifier: offer,
                retentionEntry: entry,
                customerHash: "0123456789ab",
                policyVersion: String(repeating: "0", count: 64),
                granted: true,
                reasons: "",
                lookbackSeconds: 0,
                factsHash: "snapshot-\(bundle)",
                factsSnapshot: snapshot
            )
        }
        store.logDecision(record("introductory", offer: "", entry: nil, at: 2_000))
        store.logDecision(record("retention", offer: "", entry: Self.fallback, at: 1_000))
        await store.flushDecisionLog()
        let candidate = try OfferPolicy(
            text: """
                apps:
                  - bundleIdentifier: \(bundle)
                    products:
                      - productIdentifier: com.example.monthly
                        subscriptionGroupIdentifier: "21000001"
                        introductoryOffer:
                          rules: [never-had-introductory-offer]
                        offers:
                          - offerIdentifier: retention_30
                            rules: [auto-renew-off]
                        retention:
                          - promotionalOffer: retention_30
                            messageIdentifier: \(Self.offerMessage)
                          - messageIdentifier: \(Self.fallback)
                """
        )
        let report = try await PolicyDryRun(store: store, candidate: candidate).run(days: 1)
        #expect(report.replayed == 2)
        #expect(report.grantedToRefused == 1)
        #expect(report.changedOffer == 1)
        #expect(report.unchanged == 0)
        #expect(report.byOffer == [.init(productIdentifier: "com.example.monthly", offerIdentifier: "", grantedToRefused: 1, refusedToGranted: 0)])
        let retention = try #require(report.examples.first { $0.channel == "retention" })
        #expect(retention.before.retentionEntry == Self.fallback)
        #expect(retention.after.retentionEntry == Self.offerMessage && retention.after.offerIdentifier == "retention_30")
        #expect(report.signaturesPerDay == .init(before: 1, after: 2, change: 1))
        try await store.close()
    }
}

/// Retention decisions made through the real-time endpoint are logged with the chosen entry.
@Suite struct RetentionDecisionLogTests {
    @Test("a retention request's decision is logged on the retention channel with the chosen entry", arguments: StoreBackend.available)
    func retentionDecisionsAreLogged(_ backend: StoreBackend) async throws {
        let fixture = try await RetentionFixture(backend)
        let original = "\(Int.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))"
        try await fixture.application.test(.router) { client in
            try await fixture.subscribe(client, token: nil, originalTransactionId: original, renewed: true, autoRenew: .on)
            #expect(try await fixture.ask(client, try await fixture.request(originalTransactionId: original)).status == .ok)
            let stranger = "\(Int.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))"
            #expect(try await fixture.ask(client, try await fixture.request(originalTransactionId: stranger)).status == .ok)
        }
        await fixture.store.flushDecisionLog()
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1
        let decisions = try await fixture.store.policyDecisions(
            bundleIdentifiers: [fixture.bundle],
            since: now - 3_600_000,
            until: now,
            after: nil,
            limit: 100
        )
        #expect(decisions.count == 2)
        #expect(decisions.allSatisfy { $0.channel == "retention" && $0.granted && $0.productIdentifier == RetentionFixture.monthly })
        #expect(Set(decisions.compactMap(\.retentionEntry)) == ["5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e02", "5a0e3d6c-1b2a-4c3d-8e9f-0a1b2c3d4e03"])
        #expect(decisions.allSatisfy { !$0.customerHash.contains(original) })
        try await fixture.store.close()
    }
}

/// A running experiment (issue 45): each decision is logged with the experiment and variant it got, so a candidate
/// that keeps the experiment as in force replays with those variants; one that changes it is refused (422) saying
/// what to do. Sixteen customers, odd ones `churnRisk: high`, even ones `medium`, each asking for `winback` (gated
/// by the experiment: variant `offered` gets it, `held` is the holdout) and `welcome` (no experiment).
struct ExperimentHistory {
    static let product = "com.example.monthly"
    static let customers = (1...16).map { "x-customer-\($0)" }
    let bundle = "com.example.dryrun-x-\(UUID().uuidString.prefix(8).lowercased())"
    let store: any OfferStore
    let service: SigningPipeline

    static func policy(bundle: String, churn: String = "[high]", weights: (Int, Int) = (1, 1), experiment: Bool = true) -> String {
        """
        apps:
          - bundleIdentifier: \(bundle)
            products:
              - productIdentifier: \(product)
                offers:
                  - offerIdentifier: winback
                    rules: [{ churn-risk: { values: \(churn) } }]
                  - offerIdentifier: welcome
        """
            + (experiment
                ? """

                experiments:
                  - id: winback-split
                    productIdentifier: \(product)
                    variants:
                      - { name: offered, offerIdentifier: winback, weight: \(weights.0) }
                      - { name: held, holdout: true, weight: \(weights.1) }
                """ : "")
    }

    init(_ backend: StoreBackend) async throws {
        store = try await backend.open()
        let policy = try OfferPolicy(text: Self.policy(bundle: bundle))
        let keyRing = try KeyRing(keys: [.init(key: try SigningKey.generate(keyIdentifier: "TESTKEY001"), source: "test")])
        service = SigningPipeline(apps: [], keyRing: keyRing, policy: policy, store: store)
    }

    /// The variant the policy in force assigns a customer.
    func variant(_ customer: String) throws -> String {
        let experiment = try #require(service.policy?.experiment("winback-split"))
        return experiment.variant(for: CustomerKey(bundleIdentifier: bundle, applicationUsername: customer)).name
    }

    /// The 32 decisions; answers how many `winback` ones were granted.
    func make() async throws -> Int {
        var granted = 0
        for (index, customer) in Self.customers.enumerated() {
            let key = CustomerKey(bundleIdentifier: bundle, applicationUsername: customer)
            try await store.updateCustomer(key) { $0.flags["churnRisk"] = index % 2 == 0 ? "high" : "medium" }
            for offer in ["winback", "welcome"] {
                do {
                    _ = try await service.signing.signLegacy(
                        SignOfferRequest(
                            bundleIdentifier: bundle,
                            productIdentifier: Self.product,
                            offerIdentifier: offer,
                            applicationUsername: customer
                        )
                    )
                    granted += offer == "winback" ? 1 : 0
                } catch let error as OfferServiceError where error.code == .notEligible {}
            }
        }
        await store.flushDecisionLog()
        return granted
    }

}

@Suite struct ExperimentDryRunTests {
    static let customers = ExperimentHistory.customers
    static func policy(bundle: String, churn: String = "[high]", weights: (Int, Int) = (1, 1), experiment: Bool = true) -> String {
        ExperimentHistory.policy(bundle: bundle, churn: churn, weights: weights, experiment: experiment)
    }

    func post(_ client: some TestClientProtocol, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/admin/policy/dry-run?days=7",
            method: .post,
            headers: [
                .contentType: "application/yaml", .authorization: "Bearer \(AdminPolicyDryRunRouteTests.token)",
            ],
            body: ByteBuffer(string: body)
        )
    }

    @Test(
        "each decision is logged with its experiment and variant; a candidate keeping the experiment replays with them, one changing it is 422",
        arguments: StoreBackend.available
    )
    func keepingTheExperimentReplays(_ backend: StoreBackend) async throws {
        let history = try await ExperimentHistory(backend)
        let offered = try Self.customers.filter { try history.variant($0) == "offered" }
        let highOffered = offered.filter { Self.customers.firstIndex(of: $0)! % 2 == 0 }
        let mediumOffered = offered.count - highOffered.count
        let highHeld = Self.customers.indices.filter { $0 % 2 == 0 }.count - highOffered.count
        // Both variants are there, or the replay of a variant would not be checked.
        #expect(!offered.isEmpty && offered.count < Self.customers.count)
        #expect(try await history.make() == highOffered.count)

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let logged = try await history.store.policyDecisions(
            bundleIdentifiers: [history.bundle],
            since: now - 3_600_000,
            until: now + 60_000,
            after: nil,
            limit: 100
        )
        #expect(logged.count == 32)
        let winback = logged.filter { $0.offerIdentifier == "winback" }
        #expect(winback.allSatisfy { $0.experimentIdentifier == "winback-split" && $0.experimentVariant != nil })
        #expect(logged.filter { $0.offerIdentifier == "welcome" }.allSatisfy { $0.experimentIdentifier == nil && $0.experimentVariant == nil })
        #expect(logged.filter { $0.experimentVariant == "offered" }.count == offered.count)

        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: history.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "carol:\(AdminPolicyDryRunRouteTests.token)")
        )
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            func answer(_ yaml: String) async throws -> [String: Any] {
                let response = try await post(client, yaml)
                #expect(response.status == .ok, "\(response.text)")
                return try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
            }
            // The policy in force itself: every decision replays to what it was, each customer in their logged variant.
            let same = try await answer(Self.policy(bundle: history.bundle))
            #expect(same["replayed"] as? Int == 32)
            #expect(same["unchanged"] as? Int == 32)
            // One real change, the experiment kept: only the medium-risk customers of the offered variant change.
            let looser = try await answer(Self.policy(bundle: history.bundle, churn: "[high, medium]"))
            #expect(looser["replayed"] as? Int == 32)
            #expect(looser["refusedToGranted"] as? Int == mediumOffered)
            #expect(looser["grantedToRefused"] as? Int == 0)
            // The experiment removed: the held-out high-risk customers are granted (the log needs no variant for it).
            let without = try await answer(Self.policy(bundle: history.bundle, experiment: false))
            #expect(without["refusedToGranted"] as? Int == highHeld)
            // Another split (weights) cannot be replayed: 422, saying what to do.
            let resplit = try await post(client, Self.policy(bundle: history.bundle, weights: (1, 3)))
            #expect(resplit.status == .unprocessableContent)
            let error = try resplit.decode(ErrorBody.self).error
            #expect(error.code == "dry_run_needs_facts")
            #expect(error.message.contains("winback-split") && error.message.contains("exactly as in force"))
        }
        // Without the policy in force (`offer-signer policy dry-run`): refused, saying where it can be replayed.
        let offline = await #expect(throws: OfferServiceError.self) {
            try await PolicyDryRun(store: history.store, candidate: try OfferPolicy(text: Self.policy(bundle: history.bundle))).run(days: 7)
        }
        #expect(offline?.code == .dryRunNeedsFacts && offline?.message.contains("not known here") == true)
        try await history.store.close()
    }

    @Test(
        "decisions made while the experiment ran but logged without its variant (before schema 18) are counted as not replayed, never guessed",
        arguments: StoreBackend.available
    )
    func decisionsWithoutTheirVariantAreCounted(_ backend: StoreBackend) async throws {
        let history = try await ExperimentHistory(backend)
        _ = try await history.make()
        // Three win-back decisions as a release before schema 18 logged them: no experiment, no variant.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let logged = try await history.store.policyDecisions(
            bundleIdentifiers: [history.bundle],
            since: now - 3_600_000,
            until: now + 60_000,
            after: nil,
            limit: 100
        )
        let model = try #require(logged.first { $0.offerIdentifier == "winback" })
        let snapshots = [model.factsHash: model.factsSnapshot]
        for offset in 1...3 {
            history.store.logDecision(
                PolicyDecisionRecord(
                    decidedAt: now - Int64(offset) * 1000,
                    channel: model.channel,
                    bundleIdentifier: history.bundle,
                    productIdentifier: model.productIdentifier,
                    offerIdentifier: "winback",
                    customerHash: model.customerHash,
                    policyVersion: model.policyVersion,
                    granted: false,
                    reasons: model.reasons,
                    lookbackSeconds: model.lookbackSeconds,
                    factsHash: model.factsHash,
                    factsSnapshot: try #require(snapshots[model.factsHash])
                )
            )
        }
        await history.store.flushDecisionLog()
        let inForce = try #require(history.service.policy)
        let report = try await PolicyDryRun(store: history.store, candidate: inForce, inForce: inForce).run(days: 7)
        #expect(report.replayed == 32)
        #expect(report.unchanged == 32)
        #expect(report.notReplayed == .init(unreadable: 0, withoutExperimentVariant: 3))
        #expect(ConsolePages.notReplayedNote(report.notReplayed).text.contains("3 made while the candidate"))
        #expect(ConsolePages.notReplayedNote(.init()).text.isEmpty)
        // The candidate without the experiment needs no variant: all 35 replay.
        let without = try OfferPolicy(text: Self.policy(bundle: history.bundle, experiment: false))
        let all = try await PolicyDryRun(store: history.store, candidate: without, inForce: inForce).run(days: 7)
        #expect(all.replayed == 35 && all.notReplayed == .init())

        // `offer-signer policy dry-run` takes the policy in force as `serve` does: the file until one is applied to the
        // store, then the store's; with it, a candidate keeping the experiment replays offline too.
        let document = StorePolicy(store: history.store, documentName: "policy-\(UUID().uuidString.prefix(8))")
        let fromFile = try await document.inForce(file: inForce)
        #expect(fromFile?.version == inForce.version)
        #expect(try await PolicyDryRun(store: history.store, candidate: inForce, inForce: fromFile).run(days: 7).replayed == 32)
        #expect(try await document.inForce(file: nil) == nil)
        _ = try await document.apply(without)
        let applied = try await document.inForce(file: inForce)
        #expect(applied?.version == without.version)
        await #expect(throws: OfferServiceError.self) {
            try await PolicyDryRun(store: history.store, candidate: inForce, inForce: applied).run(days: 7)
        }
        try await history.store.close()
    }

    @Test(
        "the console's policy page starts a candidate from the policy in force and shows the candidate's line diff against it",
        arguments: StoreBackend.available
    )
    func consoleStartsFromThePolicyInForce(_ backend: StoreBackend) async throws {
        let history = try await ExperimentHistory(backend)
        _ = try await history.make()
        let inForce = try #require(history.service.policy?.text)
        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: history.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: "alice:\(ConsoleTests.token)")
        )
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            let session = try await ConsoleTests.signIn(client)
            let empty = try await ConsoleTests.get(client, "/console/policy", session).text
            #expect(empty.contains("id=\"start-from-policy\""))
            #expect(empty.contains("spellcheck=\"false\"></textarea>"))
            let started = try await ConsoleTests.get(client, "/console/policy?start=in-force", session).text
            #expect(started.contains("spellcheck=\"false\">\(HTML.escape(inForce))</textarea>"))
            // One line changed, the experiment kept: replayed (not 422), and the diff shows that line only.
            // With CRLF line ends, as a browser sends a text area.
            let candidate = inForce.replacingOccurrences(of: "values: [high]", with: "values: [high, medium]")
                .replacingOccurrences(of: "\n", with: "\r\n")
            let fields = [("csrf", session.csrf), ("candidate", candidate), ("days", "7")]
            let response = try await ConsoleTests.post(client, "/console/policy", fields, cookie: session.cookie)
            #expect(response.status == .ok)
            #expect(response.text.contains("id=\"dry-run-result\" data-replayed=\"32\""))
            #expect(response.text.contains("id=\"candidate-diff\" data-added=\"1\" data-removed=\"1\""))
            let line = try #require(inForce.split(separator: "\n").first { $0.contains("values: [high]") })
            #expect(response.text.contains("<span class=\"del\">- \(line)</span>"))
            #expect(response.text.contains("<span class=\"add\">+ \(line.replacingOccurrences(of: "[high]", with: "[high, medium]"))</span>"))
            // Two lines of context around the change; the lines further away are folded.
            #expect(!response.text.contains("<span class=\"same\">  apps:</span>") && response.text.contains("<span class=\"gap\">…</span>"))
        }
        try await history.store.close()
    }
}
