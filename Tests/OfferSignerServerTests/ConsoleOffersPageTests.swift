import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import OfferModel
import OfferStore
import Testing

@testable import OfferSignerServer

/// The Offers page reads one page of the report: the offers with the most signatures first, 50 a page, each row's
/// figures computed for that row alone (docs/console.md "The Offers page"). Every figure it shows must be the one
/// `GET /admin/outcomes` reports for the same offer, on SQLite and PostgreSQL.
@Suite struct ConsoleOffersPageTests {
    typealias Fixture = ConsoleTests.Fixture
    static let day: Int64 = 86_400_000

    /// Each row of the page's table, its cells' text, keyed by app, product, offer and channel.
    static func rows(_ page: String) -> [[String]] {
        guard let body = page.firstMatch(of: /<tbody>(.*?)<\/tbody>/.dotMatchesNewlines()) else { return [] }
        return body.1.matches(of: /<tr>(.*?)<\/tr>/.dotMatchesNewlines()).map { row in
            row.1.matches(of: /<td[^>]*>(.*?)<\/td>/.dotMatchesNewlines()).map { cell in
                String(cell.1).replacing(/<[^>]+>/, with: "").replacingOccurrences(of: "&amp;", with: "&")
            }
        }
    }

    /// The report's rows as the table shows them: offer, product, issued, redeemed, refunded, revenue, renewed,
    /// attributed, customers, channel, app.
    static func expected(_ report: OutcomeReport) -> [[String]] {
        report.offers.map { offer in
            let revenue = offer.revenue.map { ConsoleLayout.money($0.milliunits, $0.currency) }.joined(separator: ", ")
            return [
                offer.offerIdentifier.isEmpty ? "(introductory)" : offer.offerIdentifier, offer.productIdentifier, "\(offer.issued)",
                "\(offer.redeemed)", "\(offer.refunded)", revenue.isEmpty ? "–" : revenue, "\(offer.renewedAfterOffer)", "\(offer.attributed)",
                "\(offer.customers)",
                ConsoleLayout.channelName(offer.channel), offer.bundleIdentifier,
            ]
        }
    }

    @Test(
        "the table's pages hold every row of GET /admin/outcomes, most signatures first, with its figures; the cards and chart too",
        arguments: StoreBackend.available
    )
    func pagesMatchTheReport(_ backend: StoreBackend) async throws {
        let fixture = try await Fixture(backend: backend)
        let app = ConsoleTests.app
        // Three whole days long past, drawn at random among 19 years: no other test (nor an earlier run: the
        // PostgreSQL database is shared and kept) writes to them.
        let start = 631_152_000_000 + Int64.random(in: 0..<7_000) * Self.day
        func day(_ at: Int64) -> String { ConsoleRange.day(Date(timeIntervalSince1970: Double(at) / 1000)) }
        let range = "from=\(day(start))&to=\(day(start + 2 * Self.day))"
        // 53 offers over three days, offer i signed (i % 7) + 1 times to customers shared between offers and days, one
        // for retention; signatures the day before and after the range, which it must not count.
        var count = 0
        for index in 0..<53 {
            for copy in 0..<((index % 7) + 1) {
                count += 1
                try await fixture.store.record(
                    IssuedSignature(
                        nonce: UUID().uuidString.lowercased(),
                        keyIdentifier: "TESTKEY001",
                        bundleIdentifier: app,
                        productIdentifier: index % 2 == 0 ? "monthly" : "yearly",
                        offerIdentifier: String(format: "offer-%02d", index),
                        applicationUsername: "user-\(copy % 3)",
                        timestamp: start + Int64(count % 3) * Self.day + Int64(copy) * 60_000,
                        format: "legacy",
                        channel: index == 5 ? "retention" : "api"
                    )
                )
            }
        }
        for outside in [start - 1, start + 3 * Self.day] {
            try await fixture.store.record(
                IssuedSignature(
                    nonce: UUID().uuidString.lowercased(),
                    keyIdentifier: "TESTKEY001",
                    bundleIdentifier: app,
                    productIdentifier: "monthly",
                    offerIdentifier: "offer-06",
                    applicationUsername: "user-9",
                    timestamp: outside,
                    format: "legacy"
                )
            )
        }
        // Redemptions of a few offers (two currencies) and of an offer code this service never signed (a row of its own).
        let redeemed: [(offer: String, product: String, type: Int32, price: Int64, currency: String)] = [
            ("offer-06", "monthly", 2, 1990, "USD"), ("offer-06", "monthly", 2, 2490, "EUR"), ("offer-13", "yearly", 2, 990, "USD"),
            ("offer-52", "monthly", 2, 490, "USD"), ("code-spring", "monthly", 3, 2990, "USD"),
        ]
        let transactionBase = 2_003_031_000_000_000 + Int64.random(in: 0..<1_000_000) * 1000
        for (index, redemption) in redeemed.enumerated() {
            let transaction = "\(transactionBase + Int64(index))"
            _ = try await fixture.store.recordRedemption(
                Redemption(
                    environment: "Sandbox",
                    transactionId: transaction,
                    originalTransactionId: transaction,
                    customer: CustomerKey(bundleIdentifier: app, applicationUsername: "user-\(index)"),
                    productIdentifier: redemption.product,
                    offerType: redemption.type,
                    offerIdentifier: redemption.offer,
                    offerDiscountType: "PAY_UP_FRONT",
                    offerPeriod: "P1M",
                    price: redemption.price,
                    currency: redemption.currency,
                    storefront: "USA",
                    purchaseDate: start + Int64(index) * 3_600_000
                )
            )
        }
        let issuedInRange = count
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let first = try await ConsoleTests.get(client, "/console/offers?\(range)", session).text
            let second = try await ConsoleTests.get(client, "/console/offers?\(range)&page=2", session).text
            let beyond = try await ConsoleTests.get(client, "/console/offers?\(range)&page=3", session)
            let api = try await client.execute(
                uri: "/admin/outcomes?from=\(start)&to=\(start + 3 * Self.day)",
                method: .get,
                headers: [.authorization: "Bearer \(ConsoleTests.token)"]
            )
            #expect(api.status == .ok)
            let report = try JSONDecoder().decode(OutcomeReport.self, from: Data(api.body.readableBytesView))
            let expected = Self.expected(report)
            #expect(expected.count == 54)

            let shown = Self.rows(first)
            let next = Self.rows(second)
            #expect(shown.count == 50 && next.count == 4)
            // Every row of the report on one of the pages, with the report's figures, the most signatures first.
            #expect(Set(shown + next) == Set(expected))
            #expect(shown.count + next.count == expected.count)
            let issued = (shown + next).map { Int($0[2]) ?? -1 }
            #expect(issued == issued.sorted(by: >))
            #expect(shown.first?[0] == "offer-06" && shown.first?[2] == "7")
            #expect(next.last?[0] == "code-spring")
            #expect(first.contains("Offers 1–50 of 54") && second.contains("Offers 51–54 of 54"))
            let link = "/console/offers?\(range.replacingOccurrences(of: "&", with: "&amp;"))&amp;page="
            #expect(first.contains("href=\"\(link)2\" rel=\"next\"") && !first.contains("rel=\"prev\""))
            #expect(second.contains("href=\"\(link)1\" rel=\"prev\"") && !second.contains("rel=\"next\""))
            #expect(beyond.status == .ok && Self.rows(beyond.text).isEmpty && beyond.text.contains("past the last page (2)"))
            #expect(beyond.text.contains("href=\"\(link)2\" rel=\"prev\""))

            // The cards: the report's totals, whatever the page.
            for page in [first, second] {
                #expect(page.contains("data-metric=\"issued\">\(report.offers.map(\.issued).reduce(0, +))<"))
                #expect(page.contains("data-metric=\"issued\">\(issuedInRange)<"))
                #expect(page.contains("data-metric=\"redeemed\">\(report.offers.map(\.redeemed).reduce(0, +))<"))
                #expect(page.contains("data-metric=\"refunded\">\(report.offers.map(\.refunded).reduce(0, +))<"))
                #expect(page.contains("data-metric=\"renewed\">\(report.offers.map(\.renewedAfterOffer).reduce(0, +))<"))
                #expect(page.contains("data-currency=\"EUR\">2.49 EUR<") && page.contains("data-currency=\"USD\">6.46 USD<"))
            }

            // The chart: each day's bars as GET /admin/outcomes/daily counts them.
            let daily = try await client.execute(
                uri: "/admin/outcomes/daily?from=\(start)&to=\(start + 3 * Self.day)",
                method: .get,
                headers: [.authorization: "Bearer \(ConsoleTests.token)"]
            )
            let json = try #require(try JSONSerialization.jsonObject(with: Data(daily.body.readableBytesView)) as? [String: Any])
            let days = try #require(json["days"] as? [[String: Any]])
            var fromAPI: [String: [String: Int]] = [:]
            for report in days {
                let from = try #require(report["from"] as? NSNumber).doubleValue
                let offers = report["offers"] as? [[String: Any]] ?? []
                fromAPI[String(Date(timeIntervalSince1970: from / 1000).formatted(.iso8601).prefix(10))] = [
                    "issued": offers.compactMap { $0["issued"] as? Int }.reduce(0, +),
                    "redeemed": offers.compactMap { $0["redeemed"] as? Int }.reduce(0, +),
                ]
            }
            var charted: [String: [String: Int]] = [:]
            for match in first.matches(of: /data-day="([0-9-]+)" data-series="(issued|redeemed)" data-value="([0-9]+)"/) {
                charted[String(match.1), default: [:]][String(match.2)] = Int(match.3)
            }
            #expect(charted.count == 3)
            #expect(charted == fromAPI)

            for bad in ["page=0", "page=-1", "page=two", "page=1234567"] {
                #expect(try await ConsoleTests.get(client, "/console/offers?\(range)&\(bad)", session).status == .badRequest, "\(bad)")
            }
        }
    }

    @Test("a range cut by the hour (the last 7 days): the page's rows are the report's for the same window")
    func partDays() async throws {
        let fixture = try await Fixture()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // One an hour before the range: its first day has a signature outside it, so that part day is counted from the log.
        let signed = [now - 3_600_000, now - 3_600_000, now - Self.day, now - 6 * Self.day, now - 8 * Self.day, now - 7 * Self.day - 3_600_000]
        for (index, at) in signed.enumerated() {
            try await fixture.store.record(
                IssuedSignature(
                    nonce: UUID().uuidString.lowercased(),
                    keyIdentifier: "TESTKEY001",
                    bundleIdentifier: ConsoleTests.app,
                    productIdentifier: "monthly",
                    offerIdentifier: index % 2 == 0 ? "winback" : "loyalty",
                    applicationUsername: "user-\(index % 2)",
                    timestamp: at,
                    format: "legacy"
                )
            )
        }
        try await fixture.test { client in
            let session = try await ConsoleTests.signIn(client)
            let page = try await ConsoleTests.get(client, "/console/offers?days=7", session).text
            let api = try await client.execute(
                uri: "/admin/outcomes?from=\(now - 7 * Self.day + 60_000)&to=\(Int64(Date().timeIntervalSince1970 * 1000))",
                method: .get,
                headers: [.authorization: "Bearer \(ConsoleTests.token)"]
            )
            let report = try JSONDecoder().decode(OutcomeReport.self, from: Data(api.body.readableBytesView))
            #expect(report.offers.map(\.issued).reduce(0, +) == 4)
            // The most signatures first, then by offer (a tie here: two each).
            let ordered = Self.expected(report).sorted { Int($0[2]) ?? 0 == Int($1[2]) ?? 0 ? $0[0] < $1[0] : Int($0[2]) ?? 0 > Int($1[2]) ?? 0 }
            #expect(Self.rows(page) == ordered)
            #expect(ordered.map { $0[0] } == ["loyalty", "winback"])
            #expect(page.contains("data-metric=\"issued\">4<"))
        }
    }
}
