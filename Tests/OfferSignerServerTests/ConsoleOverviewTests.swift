import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OfferApplication
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// The console's overview and offers pages as an on-call engineer and a product manager read them (docs/console.md):
/// configuration warnings, health figures, the time range, rates and revenue per currency, the CSV export, key
/// changes marked on the chart.
@Suite struct ConsoleOverviewTests {
    typealias Fixture = ConsoleTests.Fixture

    static func signature(_ user: String, at timestamp: Int64) -> IssuedSignature {
        IssuedSignature(
            nonce: UUID().uuidString.lowercased(),
            keyIdentifier: "TESTKEY001",
            bundleIdentifier: ConsoleTests.app,
            productIdentifier: "monthly",
            offerIdentifier: "winback",
            applicationUsername: user,
            timestamp: timestamp,
            format: "legacy"
        )
    }

    static func redemption(_ user: String, transaction: String, price: Int64, currency: String, at purchaseDate: Int64) -> Redemption {
        Redemption(
            environment: "Sandbox",
            transactionId: transaction,
            originalTransactionId: transaction,
            customer: CustomerKey(bundleIdentifier: ConsoleTests.app, applicationUsername: user),
            productIdentifier: "monthly",
            offerType: 2,
            offerIdentifier: "winback",
            offerDiscountType: "PAY_UP_FRONT",
            offerPeriod: "P1M",
            price: price,
            currency: currency,
            storefront: "USA",
            purchaseDate: purchaseDate
        )
    }

    @Test("the overview warns when notifications are refused and names no policy; it shows version, error rate and last signature")
    func warnsWhenMisconfigured() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await fixture.store.record(Self.signature("user-1", at: now - 120_000))
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let page = try await ConsoleTests.get(client, "/console", session).text
            // No NotificationIngestor and no policy: the page is not green, and says what to set.
            #expect(page.contains("data-warning=\"notifications-refused\""))
            #expect(page.contains("data-warning=\"no-policy\""))
            #expect(!page.contains("data-warning=\"demo\""))
            #expect(page.contains("OFFER_SIGNER_APP_APPLE_ID"))
            #expect(page.contains("class=\"status bad\""))
            #expect(!page.contains("Nothing needs attention"))
            #expect(page.contains("data-metric=\"version\">\(ServiceVersion.current)<"))
            #expect(page.contains("data-metric=\"error-rate\""))
            #expect(page.contains("data-metric=\"latency-p50\""))
            #expect(page.contains("data-metric=\"last-signature\">2 min ago<"))
            #expect(page.contains("data-metric=\"last-notification\">never<"))
        }
    }

    @Test("a service that accepts the demo's public admin token is warned about it")
    func warnsAboutTheDemoToken() async throws {
        let fixture = try await Fixture()
        let tokens = try BearerTokens(parsing: "alice:\(ConsoleTests.token),demo:\(ServiceConfiguration.demoAdminToken)")
        let router = buildRouter(useCases: OfferSignerUseCases(pipeline: fixture.service, keyManager: fixture.manager), adminTokens: tokens)
        try await Application(router: router, logger: Logger(label: "test")).test(.router) { client in
            let session = try await ConsoleTests.signIn(client)
            #expect(try await ConsoleTests.get(client, "/console", session).text.contains("data-warning=\"demo\""))
        }
        try await fixture.store.close()
    }

    @Test("the range: 7, 30 or 90 days or from-to; rates and revenue per currency in the cards; anything else is 400")
    func range() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day: Int64 = 86_400_000
        for (index, at) in [now - day, now - 2 * day, now - 20 * day, now - 60 * day].enumerated() {
            try await fixture.store.record(Self.signature("user-\(index)", at: at))
        }
        _ = try await fixture.store.recordRedemption(
            Self.redemption("user-0", transaction: "2000000000000001", price: 1990, currency: "USD", at: now - day)
        )
        _ = try await fixture.store.recordRedemption(
            Self.redemption("user-2", transaction: "2000000000000002", price: 2490, currency: "EUR", at: now - 20 * day)
        )
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            func bars(_ page: String) -> Int { page.matches(of: /data-series="issued" data-value="([0-9]+)"/).map { Int($0.1) ?? 0 }.reduce(0, +) }
            let week = try await ConsoleTests.get(client, "/console/offers?days=7", session).text
            #expect(bars(week) == 2)
            #expect(week.contains("Last 7 days"))
            #expect(week.contains("data-currency=\"USD\">1.99 USD<"))
            #expect(!week.contains("data-currency=\"EUR\""))
            let quarter = try await ConsoleTests.get(client, "/console/offers?days=90", session).text
            #expect(bars(quarter) == 4)
            #expect(quarter.contains("data-currency=\"EUR\">2.49 EUR<") && quarter.contains("data-currency=\"USD\">1.99 USD<"))
            // 2 redemptions attributed of 4 signatures issued.
            #expect(quarter.contains("data-metric=\"redemption-rate\">50.0 %<"))
            let overview = try await ConsoleTests.get(client, "/console?days=30", session).text
            #expect(overview.contains("data-metric=\"issued\">3<"))
            let from = ConsoleRange.day(Date(timeIntervalSince1970: Double(now - 3 * day) / 1000))
            let to = ConsoleRange.day(Date(timeIntervalSince1970: Double(now - day) / 1000))
            let custom = try await ConsoleTests.get(client, "/console/offers?from=\(from)&to=\(to)", session).text
            #expect(bars(custom) == 2)
            #expect(custom.contains("\(from) to \(to)"))
            for bad in ["days=8", "from=2026-02-30&to=2026-03-01", "from=2026-11-10&to=2026-11-01", "from=2020-01-01&to=2026-01-01"] {
                #expect(try await ConsoleTests.get(client, "/console/offers?\(bad)", session).status == .badRequest, "\(bad)")
            }
        }
    }

    @Test("the CSV export is the table of the range, one revenue column per currency, spreadsheet formulas defused")
    func csvExport() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await fixture.store.record(Self.signature("user-1", at: now - 86_400_000))
        try await fixture.store.record(Self.signature("user-2", at: now - 86_400_000))
        _ = try await fixture.store.recordRedemption(
            Self.redemption("user-1", transaction: "2000000000000003", price: 1990, currency: "USD", at: now - 86_400_000)
        )
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let page = try await ConsoleTests.get(client, "/console/offers?days=7", session).text
            #expect(page.contains("href=\"/console/offers.csv?days=7\""))
            let response = try await ConsoleTests.get(client, "/console/offers.csv?days=7", session)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(response.headers[.contentDisposition]?.hasPrefix("attachment; filename=\"offers-") == true)
            let lines = String(buffer: response.body).split(separator: "\r\n").map(String.init)
            #expect(
                lines == [
                    "app,product,offer,channel,issued,customers,redeemed,attributed,renewed,refunded,revenue_USD",
                    "\(ConsoleTests.app),monthly,winback,app,2,2,1,1,0,0,1.990",
                ]
            )
            #expect(try await ConsoleTests.get(client, "/console/offers.csv?days=7", nil).status == .seeOther)
        }
        #expect(ConsolePages.csvField("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(ConsolePages.csvField("-12") == "-12")
        #expect(ConsolePages.csvField("a,b") == "\"a,b\"")
    }

    @Test("a key change is marked on the day of the daily chart")
    func chartMarksKeyChanges() async throws {
        let fixture = try await Fixture()
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            #expect(!(try await ConsoleTests.get(client, "/console/offers", session).text.contains("data-change=")))
            let activated = try await client.execute(
                uri: "/admin/keys/TESTKEY002/activate",
                method: .post,
                headers: [.authorization: "Bearer \(ConsoleTests.token)"]
            )
            #expect(activated.status == .ok)
            let page = try await ConsoleTests.get(client, "/console/offers", session).text
            let today = String(Date().formatted(.iso8601).prefix(10))
            #expect(page.contains("data-change=\"key.activate\" data-day=\"\(today)\""))
            #expect(page.contains("activate TESTKEY002"))
        }
    }

    @Test("the recent tally counts answers, 5xx and 4xx, and bounds the durations")
    func tally() {
        // A minute far from now, so that the server's own answers in the other tests do not land in it.
        let minute = Date(timeIntervalSince1970: 4_102_444_800)
        RequestTally.record(status: 200, duration: .milliseconds(3), at: minute)
        RequestTally.record(status: 200, duration: .milliseconds(40), at: minute)
        RequestTally.record(status: 503, duration: .milliseconds(700), at: minute)
        RequestTally.record(status: 404, duration: .milliseconds(1), at: minute)
        let summary = RequestTally.summary(minutes: 1, now: minute)
        #expect(summary.answered == 4 && summary.serverErrors == 1 && summary.clientErrors == 1)
        #expect(summary.serverErrorRate == 0.25)
        #expect(summary.durationBound(below: 0.5) == 5)
        #expect(summary.durationBound(below: 0.99) == 1_000)
    }

    @Test("one name per thing on the customer page: the app's bundle ID filled in, channels as app, offer types and reasons in words")
    func customerWords() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await fixture.store.record(Self.signature("user-1", at: now - 60_000))
        _ = try await fixture.store.recordRedemption(
            Self.redemption("user-1", transaction: "2000000000000004", price: 1990, currency: "USD", at: now - 30_000)
        )
        fixture.store.logDecision(
            PolicyDecisionRecord(
                decidedAt: now - 10_000,
                channel: "legacy",
                bundleIdentifier: ConsoleTests.app,
                productIdentifier: "monthly",
                offerIdentifier: "winback",
                customerHash: CustomerHash.of("user-1"),
                policyVersion: String(repeating: "0", count: 64),
                granted: false,
                reasons: "lapsed:not_lapsed",
                lookbackSeconds: 0,
                factsHash: "facts",
                factsSnapshot: #"{"f":{},"i":[]}"#
            )
        )
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let search = try await ConsoleTests.get(client, "/console/customers", session).text
            #expect(search.contains("name=\"bundleId\" placeholder=\"bundle ID\" value=\"\(ConsoleTests.app)\""))
            let page = try await ConsoleTests.get(client, "/console/customers?bundleId=\(ConsoleTests.app)&customer=user-1", session).text
            #expect(page.contains("The customer&#39;s subscription has not lapsed. <code>lapsed:not_lapsed</code>"))
            #expect(page.contains("<td>app <span class=\"muted\">· legacy signature</span></td>"))
            #expect(page.contains("<td>promotional offer</td>"))
            #expect(page.contains("app, signed "))
            // No bare offer type and no `api` channel (`legacy` stays as the signature's format, a column of its own).
            #expect(!page.contains("<td>2</td>") && !page.contains("<td>api</td>"))
        }
    }
}
