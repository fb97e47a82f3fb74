import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferModel
import OfferSignerDemo
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// The console's policy page (the policy in force, the dry-run form), the customer page's decisions and
/// redemptions, and the demo's admin token (docs/console.md), over HTTP against a history of real decisions
/// (``DryRunHistory``: twelve decisions, seven granted).
@Suite struct ConsolePolicyTests {
    func test(
        _ history: DryRunHistory,
        tokens: String = "alice:\(ConsoleTests.token)",
        _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let router = buildRouter(
            useCases: OfferSignerUseCases(pipeline: history.service, keyManager: nil),
            adminTokens: try BearerTokens(parsing: tokens)
        )
        try await Application(router: router, logger: Logger(label: "test")).test(.router, body)
    }

    @Test(
        "the policy page and its form need a session; a dry-run without the session's CSRF token is 403 and not run",
        arguments: StoreBackend.available
    )
    func sessionAndCSRF(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let admin = "csrf-\(UUID().uuidString.prefix(8))"  // the PostgreSQL database is shared with other tests
        try await test(history, tokens: "\(admin):\(ConsoleTests.token)") { client in
            let page = try await ConsoleTests.get(client, "/console/policy", nil)
            #expect(page.status == .seeOther)
            #expect(page.headers[.location] == "/console/login")
            let anonymous = try await ConsoleTests.post(client, "/console/policy", [("candidate", history.looser), ("days", "30")])
            #expect(anonymous.status == .seeOther)
            let session = try await ConsoleTests.signIn(client)
            for csrf in [nil, "", String(session.csrf.reversed())] {
                let fields = [("candidate", history.looser), ("days", "30")] + (csrf.map { [("csrf", $0)] } ?? [])
                let refused = try await ConsoleTests.post(client, "/console/policy", fields, cookie: session.cookie)
                #expect(refused.status == .forbidden)
                #expect(!refused.text.contains("dry-run-result"))
            }
        }
        let audit = try await history.store.auditEvents(limit: 1000, since: Date().addingTimeInterval(-600))
        #expect(!audit.contains { $0.action == "policy.dry-run" && $0.actor == admin })
        try await history.store.close()
    }

    @Test(
        "the form's dry-run shows what PolicyDryRun answers, by offer, audited under the admin's name; bad candidates are plain messages",
        arguments: StoreBackend.available
    )
    func dryRunRendered(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let expected = try await history.dryRun(history.looser)
        #expect(expected.refusedToGranted == 4)
        let version = try #require(history.service.policy?.version)
        try await test(history) { client in
            let session = try await ConsoleTests.signIn(client)
            let page = try await ConsoleTests.get(client, "/console/policy", session)
            #expect(page.status == .ok)
            #expect(page.text.contains(String(version.prefix(12))))
            #expect(page.text.contains("churn-risk, cap"))  // the winback offer's rules
            #expect(page.text.contains("name=\"candidate\""))
            let response = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", history.looser), ("days", "30")],
                cookie: session.cookie
            )
            #expect(response.status == .ok)
            #expect(
                response.text.contains(
                    """
                    data-replayed=\"\(expected.replayed)\" data-granted-to-refused=\"\(expected.grantedToRefused)\" \
                    data-refused-to-granted=\"\(expected.refusedToGranted)\" data-changed-offer=\"\(expected.changedOffer)\"
                    """
                )
            )
            #expect(response.text.contains("<td class=\"n\">4</td>"))  // winback: refused → granted
            #expect(response.text.contains("<code>winback</code>"))
            #expect(!response.text.contains("dry-customer"))  // examples name customers by the log's hash only
            #expect(response.text.contains("cap: { count: 3, days: 30 }"))  // the candidate stays in the form

            let invalid = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", "apps: [ {"), ("days", "30")],
                cookie: session.cookie
            )
            #expect(invalid.status == .badRequest)
            #expect(invalid.text.contains("The candidate is not a valid policy"))
            let experiment = ExperimentRouteTests.policy(bundle: history.bundle, experiment: "console-e1")
            let needsFacts = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", experiment), ("days", "30")],
                cookie: session.cookie
            )
            #expect(needsFacts.status == .unprocessableContent)
            #expect(needsFacts.text.contains("keyed hash"))
            #expect(needsFacts.text.contains("role=\"alert\""))
            let badDays = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", history.looser), ("days", "0")],
                cookie: session.cookie
            )
            #expect(badDays.status == .badRequest)
            // Over 256 KiB of candidate: refused as too long; over the body's limit: 413. Never a failure of the page.
            let long = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", String(repeating: "a", count: 300 * 1024))],
                cookie: session.cookie
            )
            #expect(long.status == .badRequest)
            let huge = try await ConsoleTests.post(
                client,
                "/console/policy",
                [("csrf", session.csrf), ("candidate", String(repeating: "a", count: 900 * 1024))],
                cookie: session.cookie
            )
            #expect(huge.status == .contentTooLarge)
        }
        let audit = try await history.store.auditEvents(limit: 1000, since: Date().addingTimeInterval(-600))
        #expect(
            audit.contains {
                $0.action == "policy.dry-run" && $0.actor == "alice" && $0.details["via"] == "console" && $0.details["refusedToGranted"] == "4"
            }
        )
        try await history.store.close()
    }

    /// A `multipart/form-data` body as a browser sends it: text fields, then a file.
    static func multipart(_ fields: [(String, String)], file: String?, boundary: String) -> ByteBuffer {
        var body = ""
        for (name, value) in fields { body += "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n" }
        body +=
            """
            --\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; \
            filename=\"\(file == nil ? "" : "candidate.yaml")\"\r\nContent-Type: \
            \(file == nil ? "application/octet-stream" : "application/yaml")\r\n\r\n\(file ?? "")\r\n
            """
        return ByteBuffer(string: body + "--\(boundary)--\r\n")
    }

    @Test(
        "a candidate uploaded as a file (multipart, as the form sends it without JavaScript) is dry-run; the upload needs the CSRF token too",
        arguments: StoreBackend.available
    )
    func upload(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let expected = try await history.dryRun(history.looser)
        try await test(history) { client in
            let session = try await ConsoleTests.signIn(client)
            let boundary = "----WebKitFormBoundary\(UUID().uuidString.prefix(12))"
            func upload(_ fields: [(String, String)], file: String?) async throws -> TestResponse {
                try await client.execute(
                    uri: "/console/policy",
                    method: .post,
                    headers: [
                        .contentType: "multipart/form-data; boundary=\(boundary)", .cookie: session.cookie,
                    ],
                    body: Self.multipart(fields, file: file, boundary: boundary)
                )
            }
            let uploaded = try await upload([("csrf", session.csrf), ("candidate", ""), ("days", "30")], file: history.looser)
            #expect(uploaded.status == .ok)
            #expect(
                uploaded.text.contains(
                    """
                    data-replayed=\"\(expected.replayed)\" data-granted-to-refused=\"\(expected.grantedToRefused)\" \
                    data-refused-to-granted=\"\(expected.refusedToGranted)\"
                    """
                )
            )
            // No file chosen: the pasted text is the candidate.
            let pasted = try await upload([("csrf", session.csrf), ("candidate", history.looser), ("days", "30")], file: nil)
            #expect(pasted.status == .ok)
            #expect(pasted.text.contains("data-refused-to-granted=\"\(expected.refusedToGranted)\""))
            #expect(try await upload([("candidate", ""), ("days", "30")], file: history.looser).status == .forbidden)
            #expect(try await upload([("csrf", String(session.csrf.reversed())), ("days", "30")], file: history.looser).status == .forbidden)
            let garbled = try await client.execute(
                uri: "/console/policy",
                method: .post,
                headers: [
                    .contentType: "multipart/form-data; boundary=\(boundary)", .cookie: session.cookie,
                ],
                body: ByteBuffer(string: "not multipart at all")
            )
            #expect(garbled.status == .badRequest)
        }
        try await history.store.close()
    }

    @Test(
        "the customer page lists the customer's decisions with their reasons, their redemptions and retention answers",
        arguments: StoreBackend.available
    )
    func customerStory(_ backend: StoreBackend) async throws {
        let history = try await DryRunHistory(backend)
        try await history.make()
        let customer = CustomerKey(bundleIdentifier: history.bundle, applicationUsername: "dry-customer-1")
        // Identifiers of this run's own: the PostgreSQL database is shared with other tests and runs.
        let original = "20\(UInt64.random(in: 100_000_000_000...999_999_999_999))"
        let transaction = "30\(UInt64.random(in: 100_000_000_000...999_999_999_999))"
        _ = try await history.store.updateCustomer(customer) { facts in
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "group",
                    productIdentifier: DryRunHistory.product,
                    originalTransactionId: original,
                    state: .active
                )
            ]
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let recorded = try await history.store.recordRedemption(
            Redemption(
                environment: "Sandbox",
                transactionId: transaction,
                originalTransactionId: original,
                customer: customer,
                productIdentifier: DryRunHistory.product,
                offerType: 2,
                offerIdentifier: "winback",
                price: 2_490,
                currency: "USD",
                purchaseDate: now
            )
        )
        #expect(recorded == .recorded(channel: "app"))
        try await history.store.recordRetentionAnswer(
            RetentionAnswerRecord(
                bundleIdentifier: history.bundle,
                requestIdentifier: UUID().uuidString.lowercased(),
                environment: "Sandbox",
                originalTransactionId: original,
                productIdentifier: DryRunHistory.product,
                offered: true,
                answeredAt: now - 1000
            )
        )
        try await history.store.recordSubscriptionEvent(
            SubscriptionEvent(environment: "Sandbox", originalTransactionId: original, kind: .autoRenewEnabled, at: now + 1000)
        )
        try await test(history) { client in
            let session = try await ConsoleTests.signIn(client)
            let page = try await ConsoleTests.get(client, "/console/customers?bundleId=\(history.bundle)&customer=dry-customer-1", session)
            #expect(page.status == .ok)
            // dry-customer-1 asked for winback three times (granted, granted, refused at the cap) and for welcome once.
            let decisions = try #require(
                page.text.components(separatedBy: "id=\"decisions\"").last?.components(separatedBy: "id=\"redemptions\"").first
            )
            #expect(decisions.components(separatedBy: "<span class=\"ok\">granted</span>").count - 1 == 3)
            #expect(decisions.components(separatedBy: "<span class=\"bad\">refused</span>").count - 1 == 1)
            #expect(decisions.contains("<code>cap:cap_reached</code>"))
            let redemptions = try #require(page.text.components(separatedBy: "id=\"redemptions\"").last)
            #expect(redemptions.contains("2.49 USD"))
            #expect(redemptions.contains("app, signed"))
            #expect(redemptions.contains("an offer"))
            #expect(!redemptions.contains("not (yet)"))  // saved by auto-renew turned back on
            // Another customer's page holds only their own decisions: dry-customer-8 was refused once (churn risk).
            let other = try await ConsoleTests.get(client, "/console/customers?bundleId=\(history.bundle)&customer=dry-customer-8", session)
            #expect(other.text.components(separatedBy: "<span class=\"bad\">refused</span>").count - 1 == 1)
            #expect(other.text.contains("No offer redeemed."))
        }
        try await history.store.close()
    }

    @Test("the demo's public admin token signs in to the demo's console only: not with tokens configured, never outside --demo")
    func demoAdminToken() async throws {
        let demo = try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0"])
        #expect(demo.adminTokens.admin(presenting: ServiceConfiguration.demoAdminToken) == "demo")
        #expect(ServiceConfiguration.demoAdminToken == "demo-admin-token")
        let own = try ServiceConfiguration.demo(environment: ["OFFER_SIGNER_PORT": "0", "OFFER_SIGNER_ADMIN_TOKENS": "ops:\(ConsoleTests.token)"])
        #expect(own.adminTokens.admin(presenting: ServiceConfiguration.demoAdminToken) == nil)
        #expect(own.adminTokens.admin(presenting: ConsoleTests.token) == "ops")
        let real = try ServiceConfiguration(environment: [
            "OFFER_SIGNER_CLIENT_AUTH": "none", "OFFER_SIGNER_BUNDLE_ID": "com.example.app",
            "OFFER_SIGNER_KEY_ABC123DEFG": try SigningKey.generate(keyIdentifier: "X").pkcs8PEMRepresentation,
        ])
        #expect(real.adminTokens.admin(presenting: ServiceConfiguration.demoAdminToken) == nil)
        for (configuration, signsIn) in [(demo, true), (own, false), (real, false)] {
            let service = SigningPipeline(apps: configuration.apps, keyRing: configuration.keyRing)
            let router = buildRouter(useCases: OfferSignerUseCases(pipeline: service, keyManager: nil), adminTokens: configuration.adminTokens)
            try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
                let response = try await ConsoleTests.post(client, "/console/login", [("token", ServiceConfiguration.demoAdminToken)])
                #expect(response.status == (signsIn ? .seeOther : .forbidden))
                #expect((response.headers[.setCookie] != nil) == signsIn)
            }
        }
    }
}
