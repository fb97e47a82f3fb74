import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferEligibility
import OfferExperiments
import OfferKeys
import OfferModel
import OfferSignerServer
import OfferSigning
import OfferStore
import Testing

/// The console (`/console`, docs/console.md): sign-in and its cookie, throttled wrong tokens, sessions, CSRF, the
/// security headers, a key change audited under the admin's name, the chart against the API, and never on the
/// public port.
@Suite struct ConsoleTests {
    static let token = "0123456789abcdef0123-console-secret"
    static let app = "com.example.app"

    /// A service with a store, two keys and an admin `alice`, and its router.
    struct Fixture {
        let store: any OfferStore
        let service: SigningPipeline
        let manager: KeyManager
        let part: RouterPart

        /// `backend`: a store of ``StoreBackend`` (a SQLite file, or the shared PostgreSQL database), else in memory.
        init(part: RouterPart = .all, policy: OfferPolicy? = nil, backend: StoreBackend? = nil) async throws {
            store =
                if let backend {
                    try await backend.open()
                } else {
                    try await makeOfferStore(databaseURL: "sqlite::memory:", logger: Logger(label: "test"))
                }
            let keys = try [SigningKey.generate(keyIdentifier: "TESTKEY001"), SigningKey.generate(keyIdentifier: "TESTKEY002")]
            let entries = keys.map { KeyRing.Entry(key: $0, source: "test") }
            service = SigningPipeline(
                apps: [AppConfiguration(bundleIdentifier: ConsoleTests.app)],
                keyRing: try KeyRing(keys: entries, activeKeyIdentifier: "TESTKEY001"),
                policy: policy,
                store: store
            )
            manager = try await KeyManager(
                holder: service.keys,
                loadKeys: { entries },
                configuredActiveKeyIdentifier: "TESTKEY001",
                stateStore: InMemoryKeyStateStore(),
                logger: Logger(label: "test")
            )
            self.part = part
        }

        func test<Value>(_ body: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
            let router = buildRouter(
                useCases: OfferSignerUseCases(pipeline: service, keyManager: manager),
                adminTokens: try BearerTokens(parsing: "alice:\(ConsoleTests.token)"),
                part: part
            )
            let value = try await Application(router: router, logger: Logger(label: "test")).test(.router, body)
            try await store.close()
            return value
        }
    }

    /// A signed-in session: the cookie header's value and the CSRF token of its forms.
    struct Session {
        var cookie: String
        var csrf: String
    }

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        ByteBuffer(string: fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&"))
    }

    static func post(
        _ client: any TestClientProtocol,
        _ uri: String,
        _ fields: [(String, String)],
        cookie: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        headers[.contentType] = "application/x-www-form-urlencoded"
        if let cookie { headers[.cookie] = cookie }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: form(fields))
    }

    static func get(_ client: any TestClientProtocol, _ uri: String, _ session: Session?) async throws -> TestResponse {
        try await client.execute(uri: uri, method: .get, headers: session.map { [.cookie: $0.cookie] } ?? [:])
    }

    static func signIn(_ client: any TestClientProtocol) async throws -> Session {
        let response = try await post(client, "/console/login", [("token", token)])
        #expect(response.status == .seeOther)
        #expect(response.headers[.location] == "/console")
        let setCookie = try #require(response.headers[.setCookie])
        let cookie = try #require(setCookie.split(separator: ";").first.map(String.init))
        let keys = try await get(client, "/console/keys", Session(cookie: cookie, csrf: ""))
        #expect(keys.status == .ok)
        let csrf = try #require(keys.text.firstMatch(of: /name="csrf" value="([A-Za-z0-9_-]+)"/)?.1)
        return Session(cookie: cookie, csrf: String(csrf))
    }

    static let pages = [
        "/console", "/console/offers", "/console/experiments", "/console/customers", "/console/customers?bundleId=com.example.app&customer=user-1",
        "/console/keys",
    ]

    @Test("sign-in sets an HttpOnly, SameSite=Strict session cookie for /console, 8 hours, Secure behind TLS")
    func signInCookie() async throws {
        try await Fixture().test { client in
            let response = try await Self.post(client, "/console/login", [("token", Self.token)])
            #expect(response.status == .seeOther)
            let cookie = try #require(response.headers[.setCookie])
            let value = try #require(cookie.firstMatch(of: /^offer_signer_session=([A-Za-z0-9_-]+);/)?.1)
            #expect(value.count == 43)  // 32 random bytes, base64url
            for flag in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=28800"] { #expect(cookie.contains(flag), "\(flag)") }
            #expect(!cookie.contains("Secure"))
            let behindTLS = try await Self.post(
                client,
                "/console/login",
                [("token", Self.token)],
                headers: [HTTPField.Name("X-Forwarded-Proto")!: "https"]
            )
            #expect(behindTLS.headers[.setCookie]?.hasSuffix("; Secure") == true)
            let session = try await Self.signIn(client)
            #expect(try await Self.get(client, "/console", session).text.contains("alice"))
            let signOut = try await Self.post(client, "/console/logout", [("csrf", session.csrf)], cookie: session.cookie)
            #expect(signOut.status == .seeOther)
            #expect(signOut.headers[.setCookie]?.contains("Max-Age=0") == true)
            #expect(try await Self.get(client, "/console", session).status == .seeOther)
        }
    }

    @Test("a wrong token is refused, then throttled with the admin API's limiter")
    func wrongTokenThrottled() async throws {
        try await Fixture().test { client in
            for _ in 0..<5 {
                let response = try await Self.post(client, "/console/login", [("token", "not-the-admin-token-at-all")])
                #expect(response.status == .forbidden)
                #expect(response.headers[.setCookie] == nil)
            }
            for _ in 0..<5 {  // the same buckets as the admin API's
                #expect(
                    try await client.execute(uri: "/admin/keys", method: .get, headers: [.authorization: "Bearer wrong-wrong-wrong-wrong"]).status
                        == .forbidden
                )
            }
            let throttled = try await Self.post(client, "/console/login", [("token", Self.token + "x")])
            #expect(throttled.status == .tooManyRequests)
            #expect(throttled.headers[.retryAfter] != nil)
            #expect(throttled.headers[.contentSecurityPolicy] != nil)
        }
    }

    @Test("every page without a session, or with an unknown one, is 303 to the sign-in form")
    func pagesNeedASession() async throws {
        try await Fixture().test { client in
            for page in Self.pages {
                for session in [nil, Session(cookie: "offer_signer_session=\(String(repeating: "A", count: 43))", csrf: "")] {
                    let response = try await Self.get(client, page, session)
                    #expect(response.status == .seeOther, "\(page)")
                    #expect(response.headers[.location] == "/console/login")
                }
            }
            #expect(try await Self.post(client, "/console/keys", [("keyIdentifier", "TESTKEY002")]).status == .seeOther)
        }
    }

    @Test("every console response carries the CSP and the other security headers")
    func securityHeaders() async throws {
        try await Fixture().test { client in
            let session = try await Self.signIn(client)
            var responses: [(String, TestResponse)] = []
            for page in Self.pages + ["/console/login", "/console/style.css", "/console/favicon.svg", "/console/experiments/none"] {
                responses.append((page, try await Self.get(client, page, session)))
            }
            responses.append(("login", try await Self.post(client, "/console/login", [("token", "nope")])))
            responses.append(("csrf", try await Self.post(client, "/console/keys", [], cookie: session.cookie)))
            responses.append(("redirect", try await Self.get(client, "/console/keys", nil)))
            // What no console route matches: an unknown page, and a page with a method it does not take.
            responses.append(("unknown", try await Self.get(client, "/console/nope", session)))
            responses.append(("method", try await client.execute(uri: "/console/offers", method: .put, headers: [.cookie: session.cookie])))
            for (page, response) in responses {
                #expect(
                    response.headers[.contentSecurityPolicy]
                        == "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
                    "\(page)"
                )
                #expect(response.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff", "\(page)")
                #expect(response.headers[HTTPField.Name("Referrer-Policy")!] == "no-referrer", "\(page)")
                #expect(response.headers[.cacheControl] == "no-store", "\(page)")
            }
            for (page, response) in responses.prefix(Self.pages.count) {
                #expect(response.status == .ok, "\(page)")
                #expect(response.text.contains("<meta name=\"viewport\""), "\(page)")
                #expect(!response.text.contains("<script"), "\(page)")
                #expect(!response.text.contains("style=\""), "\(page)")
            }
            #expect(responses.first { $0.0 == "/console/experiments/none" }?.1.status == .notFound)
            let unknown = try #require(responses.first { $0.0 == "unknown" }?.1)
            #expect(unknown.status == .notFound && unknown.text.contains("<h1>404"), "\(unknown.text)")
            let method = try #require(responses.first { $0.0 == "method" }?.1)
            #expect(method.status == .methodNotAllowed && method.text.contains("<h1>405") && method.headers[.allow] != nil, "\(method.text)")
        }
    }

    @Test("a POST without the CSRF token or with a wrong one is 403 and changes nothing")
    func csrf() async throws {
        let fixture = try await Fixture()
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let change = [("keyIdentifier", "TESTKEY002"), ("action", "activate"), ("confirmation", "TESTKEY002")]
            #expect(try await Self.post(client, "/console/keys", change, cookie: session.cookie).status == .forbidden)
            #expect(
                try await Self.post(client, "/console/keys", change + [("csrf", String(session.csrf.reversed()))], cookie: session.cookie).status
                    == .forbidden
            )
            #expect(try await Self.post(client, "/console/keys", change + [("csrf", "")], cookie: session.cookie).status == .forbidden)
            #expect(try await Self.post(client, "/console/logout", [], cookie: session.cookie).status == .forbidden)
            #expect(fixture.service.keys.current.activeKeyIdentifier == "TESTKEY001")
            let other = try await Self.signIn(client)  // another session's token is not this one's
            #expect(try await Self.post(client, "/console/keys", change + [("csrf", other.csrf)], cookie: session.cookie).status == .forbidden)
        }
    }

    @Test("a key activated through the form serves, and is audited under the admin's name; a wrong confirmation changes nothing")
    func keyRotationAudited() async throws {
        let fixture = try await Fixture()
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let wrong = try await Self.post(
                client,
                "/console/keys",
                [("csrf", session.csrf), ("keyIdentifier", "TESTKEY002"), ("action", "activate"), ("confirmation", "TESTKEY001")],
                cookie: session.cookie
            )
            #expect(wrong.status == .badRequest)
            #expect(fixture.service.keys.current.activeKeyIdentifier == "TESTKEY001")
            let response = try await Self.post(
                client,
                "/console/keys",
                [("csrf", session.csrf), ("keyIdentifier", "TESTKEY002"), ("action", "activate"), ("confirmation", "TESTKEY002")],
                cookie: session.cookie
            )
            #expect(response.status == .ok)
            #expect(fixture.service.keys.current.activeKeyIdentifier == "TESTKEY002")
            let events = try await fixture.store.auditEvents(limit: 10, since: nil)
            #expect(events.contains { $0.actor == "alice" && $0.action == "key.activate" && $0.target == "TESTKEY002" })
            #expect(response.text.contains("key.activate"))  // the page's audit
            let keys = try await client.execute(uri: "/admin/keys", method: .get, headers: [.authorization: "Bearer \(Self.token)"])
            let list = try #require(try JSONSerialization.jsonObject(with: Data(keys.body.readableBytesView)) as? [String: Any])
            #expect(list["activeKeyIdentifier"] as? String == "TESTKEY002")
        }
    }

    @Test("the admin token never appears in a response body, header or redirect")
    func tokenNeverEchoed() async throws {
        try await Fixture().test { client in
            var responses: [TestResponse] = [try await Self.post(client, "/console/login", [("token", Self.token)])]
            responses.append(try await Self.post(client, "/console/login", [("token", Self.token + "-wrong")]))
            let session = try await Self.signIn(client)
            for page in Self.pages + ["/console/login"] { responses.append(try await Self.get(client, page, session)) }
            for response in responses {
                #expect(!response.text.contains(Self.token))
                for field in response.headers { #expect(!field.value.contains(Self.token)) }
            }
            #expect(try await Self.get(client, "/console/login", nil).text.contains("method=\"post\""))
        }
    }

    @Test("the offers chart's bars carry the daily numbers of GET /admin/outcomes/daily")
    func chartMatchesTheAPI() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        for (user, at) in [("user-1", now - 2 * day), ("user-2", now - 2 * day), ("user-3", now - day), ("user-4", now - 5 * day)] {
            try await fixture.store.record(
                IssuedSignature(
                    nonce: UUID().uuidString.lowercased(),
                    keyIdentifier: "TESTKEY001",
                    bundleIdentifier: Self.app,
                    productIdentifier: "monthly",
                    offerIdentifier: "winback",
                    applicationUsername: user,
                    timestamp: at,
                    format: "legacy"
                )
            )
        }
        _ = try await fixture.store.recordRedemption(
            Redemption(
                environment: "Sandbox",
                transactionId: "2000000000000001",
                originalTransactionId: "2000000000000001",
                customer: CustomerKey(bundleIdentifier: Self.app, applicationUsername: "user-1"),
                productIdentifier: "monthly",
                offerType: 2,
                offerIdentifier: "winback",
                offerDiscountType: "PAY_UP_FRONT",
                offerPeriod: "P1M",
                price: 1990,
                currency: "USD",
                storefront: "USA",
                purchaseDate: now - day
            )
        )
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let page = try await Self.get(client, "/console/offers", session).text
            var charted: [String: [String: Int]] = [:]
            for match in page.matches(of: /data-day="([0-9-]+)" data-series="(issued|redeemed)" data-value="([0-9]+)"/) {
                charted[String(match.1), default: [:]][String(match.2)] = Int(match.3)
            }
            // The console's 30 days: whole UTC days, today's the last.
            let firstDay = (Int64(Date().timeIntervalSince1970 * 1000) / day - 29) * day
            let api = try await client.execute(
                uri: "/admin/outcomes/daily?from=\(firstDay)",
                method: .get,
                headers: [.authorization: "Bearer \(Self.token)"]
            )
            let json = try #require(try JSONSerialization.jsonObject(with: Data(api.body.readableBytesView)) as? [String: Any])
            let days = try #require(json["days"] as? [[String: Any]])
            var fromAPI: [String: [String: Int]] = [:]
            for report in days {
                let from = try #require(report["from"] as? NSNumber).doubleValue
                let key = String(Date(timeIntervalSince1970: from / 1000).formatted(.iso8601).prefix(10))
                let offers = report["offers"] as? [[String: Any]] ?? []
                fromAPI[key] = [
                    "issued": offers.compactMap { $0["issued"] as? Int }.reduce(0, +),
                    "redeemed": offers.compactMap { $0["redeemed"] as? Int }.reduce(0, +),
                ]
            }
            #expect(charted.count == 30)
            #expect(charted == fromAPI)
            #expect(charted.values.map { $0["issued"] ?? 0 }.reduce(0, +) == 4)
            #expect(charted.values.map { $0["redeemed"] ?? 0 }.reduce(0, +) == 1)
            #expect(page.contains("<title>"))
        }
    }

    @Test("the customer page shows the facts and signatures of GET /admin/customers and /admin/signatures, every value escaped")
    func customerPageEscapes() async throws {
        let fixture = try await Fixture()
        let customer = CustomerKey(bundleIdentifier: Self.app, applicationUsername: "user <b>\"&'")
        _ = try await fixture.store.updateCustomer(customer) { facts in
            facts.flags["vip"] = "<i>yes</i>"
            facts.subscriptions = [
                SubscriptionFacts(
                    subscriptionGroupIdentifier: "group",
                    productIdentifier: "monthly",
                    originalTransactionId: "2000000000000777",
                    state: .active
                )
            ]
        }
        try await fixture.store.record(
            IssuedSignature(
                nonce: UUID().uuidString.lowercased(),
                keyIdentifier: "TESTKEY001",
                bundleIdentifier: Self.app,
                productIdentifier: "monthly",
                offerIdentifier: "winback<1>",
                applicationUsername: customer.applicationUsername,
                timestamp: Int64(Date().timeIntervalSince1970 * 1000),
                format: "legacy"
            )
        )
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let page = try await Self.get(client, "/console/customers?bundleId=com.example.app&customer=user+%3Cb%3E%22%26%27", session)
            #expect(page.status == .ok)
            #expect(page.text.contains("value=\"user &lt;b&gt;&quot;&amp;&#39;\""))
            #expect(page.text.contains("vip=&lt;i&gt;yes&lt;/i&gt;"))
            #expect(page.text.contains("winback&lt;1&gt;"))
            #expect(!page.text.contains("<b>") && !page.text.contains("<i>"))
            let byTransaction = try await Self.get(client, "/console/customers?originalTransactionId=2000000000000777", session)
            #expect(byTransaction.text.contains("vip=&lt;i&gt;yes&lt;/i&gt;"))
            #expect(byTransaction.text.contains("winback&lt;1&gt;"))
            #expect(
                try await Self.get(client, "/console/customers?originalTransactionId=2000000000000778", session).text.contains("No customer is known")
            )
            #expect(try await Self.get(client, "/console/customers?originalTransactionId=12ab", session).status == .badRequest)
            let unknown = try await Self.get(client, "/console/customers?bundleId=com.example.app&customer=nobody", session)
            #expect(unknown.text.contains("has not heard of this customer"))
            let tooLong = try await Self.get(
                client,
                "/console/customers?bundleId=com.example.app&customer=\(String(repeating: "x", count: 3000))",
                session
            )
            #expect(tooLong.status == .badRequest)
            let otherApp = try await Self.get(client, "/console/customers?bundleId=com.example.nope&customer=nobody", session)
            #expect(otherApp.status == .notFound && otherApp.text.contains("<h1>404"), "\(otherApp.text)")
        }
    }

    @Test("an experiment's page draws each variant's rate and interval as GET /admin/experiments/{id} reports them")
    func experimentPage() async throws {
        let policy = try OfferPolicy(text: ExperimentRouteTests.policy(bundle: Self.app, experiment: "winback-q4"))
        let experiment = try #require(policy.experiment("winback-q4"))
        let fixture = try await Fixture(policy: policy)
        for index in 0..<30 {
            let customer = CustomerKey(bundleIdentifier: Self.app, applicationUsername: "customer-\(index)")
            _ = try await fixture.store.recordExposure(
                ExperimentExposure(
                    experimentIdentifier: "winback-q4",
                    customer: customer,
                    variant: experiment.variant(for: customer).name,
                    exposedAt: Date()
                )
            )
        }
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let list = try await Self.get(client, "/console/experiments", session)
            #expect(list.text.contains("href=\"/console/experiments/winback-q4\""))
            let page = try await Self.get(client, "/console/experiments/winback-q4", session)
            #expect(page.status == .ok)
            let api = try await client.execute(uri: "/admin/experiments/winback-q4", method: .get, headers: [.authorization: "Bearer \(Self.token)"])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(api.body.readableBytesView)) as? [String: Any])
            let variants = try #require(report["variants"] as? [[String: Any]])
            #expect(variants.count == 3)
            for variant in variants {
                let name = try #require(variant["name"] as? String)
                let rate = try #require(variant["rate"] as? [String: Any])
                let drawn = try #require(
                    page.text.firstMatch(
                        of: try Regex("data-variant=\"\(name)\" data-value=\"([0-9.e-]+)\" data-lower=\"([0-9.e-]+)\" data-upper=\"([0-9.e-]+)\"")
                    )
                )
                for (index, field) in ["estimate", "lower", "upper"].enumerated() {
                    let text = drawn.output[index + 1].substring.map(String.init) ?? ""
                    let value = try #require(Double(text))
                    #expect(abs(value - ((rate[field] as? NSNumber)?.doubleValue ?? -1)) < 1e-9, "\(name) \(field)")
                }
            }
            #expect(page.text.contains(report["note"] as? String ?? "-"))
            #expect(page.text.contains("as the weights say") == ((report["sampleRatio"] as? [String: Any])?["mismatch"] as? Bool == false))
            #expect(try await Self.get(client, "/console/experiments/\(String(repeating: "x", count: 65))", session).status == .badRequest)
        }
    }

    @Test("a revenue experiment's page shows each currency's comparison in money and each variant's payers, as the report says")
    func revenueExperimentPage() async throws {
        let settings = "productIdentifier: monthly\n    metric: revenue\n    windowDays: 7\n    variants:"
        let text = ExperimentRouteTests.policy(bundle: Self.app, experiment: "revenue-q4")
            .replacingOccurrences(of: "productIdentifier: monthly\n    variants:", with: settings)
        let policy = try OfferPolicy(text: text)
        let experiment = try #require(policy.experiment("revenue-q4"))
        #expect(experiment.metric == .revenue)
        let fixture = try await Fixture(policy: policy)
        let exposedAt = Date().addingTimeInterval(-10 * 86_400)
        for index in 0..<30 {
            let customer = CustomerKey(bundleIdentifier: Self.app, applicationUsername: "customer-\(index)")
            _ = try await fixture.store.recordExposure(
                ExperimentExposure(
                    experimentIdentifier: "revenue-q4",
                    customer: customer,
                    variant: experiment.variant(for: customer).name,
                    exposedAt: exposedAt
                )
            )
            guard index % 3 != 0 else { continue }
            let purchase = Int64((exposedAt.timeIntervalSince1970 + 86_400) * 1_000)
            try await fixture.store.recordTransaction(
                SubscriptionTransaction(
                    environment: "Sandbox",
                    transactionId: "\(7_000_000 + index)",
                    originalTransactionId: "\(7_000_000 + index)",
                    customer: customer,
                    productIdentifier: "monthly",
                    subscriptionGroupIdentifier: "group",
                    price: index % 5 == 0 ? 8_990 : 4_990 * Int64(1 + index % 2),
                    currency: index % 5 == 0 ? "EUR" : "USD",
                    purchaseDate: purchase,
                    expiresDate: purchase + 30 * 86_400_000,
                    revocationDate: nil
                )
            )
        }
        try await fixture.test { client in
            let session = try await Self.signIn(client)
            let page = try await Self.get(client, "/console/experiments/revenue-q4", session)
            #expect(page.status == .ok)
            let api = try await client.execute(uri: "/admin/experiments/revenue-q4", method: .get, headers: [.authorization: "Bearer \(Self.token)"])
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .millisecondsSince1970
            let report = try decoder.decode(ExperimentReport.self, from: Data(api.body.readableBytesView))
            // Two pairs against the holdout, in two currencies.
            #expect(report.comparisons.count == 4 && Set(report.comparisons.compactMap(\.currency)) == ["EUR", "USD"])
            for comparison in report.comparisons {
                let currency = try #require(comparison.currency)
                let key = "\(comparison.variant)-\(comparison.against)-\(currency)"
                let span = "data-comparison=\"\(key)\" data-verdict=\"\(comparison.verdict.rawValue)\">"
                #expect(page.text.contains(span + comparison.summary + "<"))
                #expect(page.text.contains("\(comparison.variant) vs \(comparison.against) in \(currency)"))
                #expect(page.text.contains(String(format: "%+.2f", comparison.difference.estimate / 1_000) + " \(currency) ("))
            }
            for variant in report.variants {
                for revenue in variant.revenue {
                    let sum = String(format: "%.2f", Double(revenue.milliunits) / 1_000)
                    #expect(page.text.contains("\(sum) \(revenue.currency)<br>\(revenue.payers) paying · "))
                }
            }
            #expect(report.variants.contains { !$0.revenue.isEmpty } && page.text.contains("per mature customer, in each currency"))
        }
    }

    @Test("the public port does not serve the console")
    func notOnThePublicPort() async throws {
        try await Fixture(part: .publicOnly).test { client async throws in
            for uri in ["/console", "/console/login", "/console/style.css", "/console/keys"] {
                #expect(try await client.execute(uri: uri, method: .get).status == .notFound, "\(uri)")
            }
            #expect(try await Self.post(client, "/console/login", [("token", Self.token)]).status == .notFound)
        }
        try await Fixture(part: .operationsOnly).test { client async throws in
            #expect(try await client.execute(uri: "/console/login", method: .get).status == .ok)
        }
    }
}
