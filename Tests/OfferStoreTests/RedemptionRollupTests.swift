import Foundation
import OfferModel
import SQLKit
import Testing

@testable import OfferStore

/// The outcome readers' redemptions, counted from `redemption_daily` (schema version 21) and the cut days, against
/// a direct count over the redemptions table — random histories of redemptions, pay-as-you-go periods, renewals,
/// refunds and expiries written in any order and at once, windows whole-day and not, on SQLite and PostgreSQL.
@Suite struct RedemptionRollupTests {
    let app = "com.example.redeemed-\(UUID().uuidString.prefix(8).lowercased())"
    let day: Int64 = 86_400_000

    /// A write of the history: a redemption, or an event of a subscription.
    private enum Write: Sendable {
        case redemption(Redemption)
        case event(SubscriptionEvent)
    }

    /// The figures of one report row: redeemed, attributed, renewed, refunded, and the revenue per currency.
    private struct Figures: Equatable, CustomStringConvertible {
        var counts = [0, 0, 0, 0]
        var revenue: [String: Int64] = [:]
        var description: String { "\(counts) \(revenue.sorted { $0.key < $1.key })" }
    }

    /// Random subscriptions over `days` days from `start`: each a redemption (a priced one in one of two currencies,
    /// or without price or currency), sometimes a second period of the same offer (pay-as-you-go), a renewal at full
    /// price, a refund, an expiry; the customers signed offers before, in either channel, so some are attributed.
    private func randomHistory(
        subscriptions: Int,
        start: Int64,
        days: Int64,
        using generator: inout some RandomNumberGenerator
    ) -> (signatures: [IssuedSignature], writes: [Write]) {
        var signatures: [IssuedSignature] = []
        var writes: [Write] = []
        for index in 0..<subscriptions {
            let original = "\(index)\(UInt64.random(in: 1_000_000_000...9_999_999_999, using: &generator))"
            let environment = ["Production", "Production", "Sandbox"].randomElement(using: &generator)!
            let username = "user-\(Int.random(in: 0..<20, using: &generator))"
            let product = ["com.example.monthly", "com.example.yearly"].randomElement(using: &generator)!
            let offer = ["winback", "save_50"].randomElement(using: &generator)!
            let type: Int32 = Int.random(in: 0..<5, using: &generator) == 0 ? 3 : 2
            let purchase = start + Int64.random(in: 0..<(days * day), using: &generator)
            if Bool.random(using: &generator) {
                signatures.append(
                    IssuedSignature(
                        nonce: UUID().uuidString.lowercased(),
                        keyIdentifier: "KEY1",
                        bundleIdentifier: app,
                        productIdentifier: product,
                        offerIdentifier: offer,
                        applicationUsername: username,
                        timestamp: purchase - Int64.random(in: 0..<day, using: &generator),
                        format: "jws",
                        channel: ["api", "retention"].randomElement(using: &generator)!
                    )
                )
            }
            let price: Int64? = Int.random(in: 0..<4, using: &generator) == 0 ? nil : Int64.random(in: 990...9990, using: &generator)
            let currency = price == nil ? nil : ["USD", "EUR", "EUR"].randomElement(using: &generator)!
            func redemption(_ transaction: String, at date: Int64) -> Write {
                .redemption(
                    Redemption(
                        environment: environment,
                        transactionId: transaction,
                        originalTransactionId: original,
                        customer: CustomerKey(bundleIdentifier: app, applicationUsername: username),
                        productIdentifier: product,
                        offerType: type,
                        offerIdentifier: offer,
                        offerDiscountType: "PAY_AS_YOU_GO",
                        offerPeriod: "P1M",
                        price: price,
                        currency: currency,
                        storefront: "USA",
                        purchaseDate: date
                    )
                )
            }
            func event(_ kind: SubscriptionEvent.Kind, at date: Int64, transaction: String) -> Write {
                .event(SubscriptionEvent(environment: environment, originalTransactionId: original, kind: kind, at: date, transactionId: transaction))
            }
            writes.append(redemption(original, at: purchase))
            if Int.random(in: 0..<4, using: &generator) == 0 {
                writes.append(redemption("\(original)-2", at: purchase + Int64.random(in: 1..<(2 * day), using: &generator)))
            }
            if Bool.random(using: &generator) {
                writes.append(event(.renewed, at: purchase + Int64.random(in: 1..<(3 * day), using: &generator), transaction: "\(original)-9"))
            }
            if Int.random(in: 0..<3, using: &generator) == 0 {
                writes.append(event(.refunded, at: purchase + Int64.random(in: 1..<(2 * day), using: &generator), transaction: original))
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {
                writes.append(event(.expired, at: purchase + Int64.random(in: 1..<(3 * day), using: &generator), transaction: original))
            }
        }
        return (signatures, writes)
    }

    /// Random windows over `[start, start + days)`: whole days, parts of days, one or two part days, the whole span.
    private func windows(start: Int64, days: Int64, using generator: inout some RandomNumberGenerator) -> [(Int64, Int64)] {
        var windows: [(Int64, Int64)] = [(start, start + days * day), (start - day, start + (days + 1) * day)]
        for _ in 0..<10 {
            let a = start - day + Int64.random(in: 0..<((days + 1) * day), using: &generator)
            let b = a + Int64.random(in: 1..<(days * day), using: &generator)
            windows.append(Bool.random(using: &generator) ? (a / day * day, (b / day + 1) * day) : (a, b))
        }
        windows.append((start + day / 2, start + day + day / 3))
        return windows
    }

    /// What the table itself says of the window, by a direct count over its rows: (product, offer, offer type,
    /// channel) → figures, and redeemed per UTC day.
    private func direct(_ store: SQLOfferStore, _ query: OutcomeQuery) async throws -> (rows: [String: Figures], days: [Int64: Int]) {
        var statement: SQLQueryString = """
            SELECT product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app') AS channel,
                purchase_date / 86400000 AS day, COUNT(*) AS redeemed, COUNT(signature_nonce) AS attributed, COUNT(renewed_at) AS renewed,
                COUNT(refunded_at) AS refunded, currency, CAST(SUM(price) AS BIGINT) AS milliunits
            FROM redemptions
            WHERE bundle_identifier = \(bind: app) AND purchase_date >= \(bind: query.from) AND purchase_date < \(bind: query.to)
              AND period_of IS NULL
            """
        if let environment = query.environment { statement += " AND environment = \(bind: environment)" }
        statement += " GROUP BY product_identifier, offer_identifier, offer_type, COALESCE(signature_channel, 'app'), purchase_date / 86400000,"
        statement += " currency"
        let counting = statement
        let found = try await store.backend.reading { database in try await database.raw(counting).all(decoding: DirectRow.self) }
        var rows: [String: Figures] = [:]
        var days: [Int64: Int] = [:]
        for row in found {
            let key = "\(row.productIdentifier)|\(row.offerIdentifier)|\(row.offerType)|\(row.channel)"
            var figures = rows[key] ?? Figures()
            figures.counts = zip(figures.counts, [row.redeemed, row.attributed, row.renewed, row.refunded]).map { $0 + $1 }
            if let currency = row.currency, let milliunits = row.milliunits { figures.revenue[currency, default: 0] += milliunits }
            rows[key] = figures
            days[row.day, default: 0] += row.redeemed
        }
        return (rows, days)
    }

    /// The report's rows with redemptions, as figures; each currency once in a row.
    private func reported(_ offers: [OfferOutcome]) -> [String: Figures] {
        var rows: [String: Figures] = [:]
        for offer in offers where offer.redeemed > 0 {
            let revenue = Dictionary(offer.revenue.map { ($0.currency, $0.milliunits) }, uniquingKeysWith: { _, _ in -1 })
            rows["\(offer.productIdentifier)|\(offer.offerIdentifier)|\(offer.offerType)|\(offer.channel)"] = Figures(
                counts: [offer.redeemed, offer.attributed, offer.renewedAfterOffer, offer.refunded],
                revenue: revenue
            )
        }
        return rows
    }

    /// Every reader of the window against the direct count: the report, its page, the totals and the daily totals.
    private func check(_ store: any OfferStore, _ query: OutcomeQuery, start: Int64) async throws {
        let sql = try #require(store as? SQLOfferStore)
        let wanted = try await direct(sql, query)
        let label = "window \(query.from)..<\(query.to) \(query.environment ?? "any"), start \(start)"
        #expect(reported(try await store.outcomeReport(query).offers) == wanted.rows, "report, \(label)")
        #expect(reported(try await store.outcomePage(query, limit: 1000, offset: 0).offers) == wanted.rows, "page, \(label)")
        let totals = try await store.outcomeTotals(query)
        let counts = wanted.rows.values.reduce([0, 0, 0, 0]) { sum, figures in zip(sum, figures.counts).map { $0 + $1 } }
        #expect([totals.redeemed, totals.attributed, totals.renewedAfterOffer, totals.refunded] == counts, "totals, \(label)")
        var revenue: [String: Int64] = [:]
        for figures in wanted.rows.values { revenue.merge(figures.revenue, uniquingKeysWith: +) }
        #expect(totals.revenue.map(\.currency) == revenue.keys.sorted(), "revenue's currencies, \(label)")
        #expect(Dictionary(totals.revenue.map { ($0.currency, $0.milliunits) }, uniquingKeysWith: +) == revenue, "revenue, \(label)")
        let daily = try await store.dailyOutcomeTotals(query)
        let first = query.from / day
        #expect(daily.count == Int((query.to - 1) / day - first + 1), "a row a day, \(label)")
        for (index, row) in daily.enumerated() {
            #expect(row.redeemed == wanted.days[first + Int64(index)] ?? 0, "day \(first + Int64(index)), \(label)")
        }
    }

    @Test("redemptions from the daily rollup equal a direct count, for random histories written in any order", arguments: Backend.available)
    func rollupEqualsDirectCount(_ backend: Backend) async throws {
        var generator = SystemRandomNumberGenerator()
        let (store, _) = try await backend.open()
        let start = (1_800_000_000_000 + Int64.random(in: 0..<(400 * day), using: &generator)) / day * day
        let (signatures, writes) = randomHistory(subscriptions: 90, start: start, days: 6, using: &generator)
        for signature in signatures { try await store.record(signature) }
        let shuffled = writes.shuffled(using: &generator)
        // Written in three goes, each at once (subscriptions meet on the same rows), the readers checked in between.
        for part in stride(from: 0, to: shuffled.count, by: 60).map({ shuffled[$0..<min($0 + 60, shuffled.count)] }) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for write in part {
                    group.addTask {
                        switch write {
                        case .redemption(let redemption): _ = try await store.recordRedemption(redemption)
                        case .event(let event): _ = try await store.recordSubscriptionEvent(event)
                        }
                    }
                }
                try await group.waitForAll()
            }
            for (from, to) in windows(start: start, days: 6, using: &generator) {
                let environment = [nil, "Production", "Sandbox"].randomElement(using: &generator)!
                try await check(store, OutcomeQuery(from: from, to: to, bundleIdentifier: app, environment: environment), start: start)
            }
        }
        // The history did exercise what the rollup keeps: refunds, renewals, later periods.
        let sql = try #require(store as? SQLOfferStore)
        let whole = try await direct(sql, OutcomeQuery(from: start, to: start + 10 * day, bundleIdentifier: app)).rows.values
        let refunded = whole.map { $0.counts[3] }.reduce(0, +)
        let renewed = whole.map { $0.counts[2] }.reduce(0, +)
        let continued = try await sql.backend.reading { database in
            try await database.raw("SELECT COUNT(*) AS n FROM redemptions WHERE bundle_identifier = \(bind: app) AND period_of IS NOT NULL")
                .first(decodingColumn: "n", as: Int.self) ?? 0
        }
        #expect(refunded > 0 && renewed > 0 && continued > 0, "refunded \(refunded), renewed \(renewed), later periods \(continued)")
        try await store.close()
    }

    @Test("redemptions recorded before the rollup are counted by the migration's back-fill")
    func migrationBackfills() async throws {
        var generator = SystemRandomNumberGenerator()
        let (store, path) = try await Backend.sqlite.open()
        let start: Int64 = 1_800_000_000_000 / day * day
        let (signatures, writes) = randomHistory(subscriptions: 60, start: start, days: 5, using: &generator)
        for signature in signatures { try await store.record(signature) }
        for write in writes {
            switch write {
            case .redemption(let redemption): _ = try await store.recordRedemption(redemption)
            case .event(let event): _ = try await store.recordSubscriptionEvent(event)
            }
        }
        let kept = try await rollupRows(try #require(store as? SQLOfferStore))
        #expect(!kept.isEmpty)
        // As version 20 left the database: no rollup.
        try await (store as? SQLOfferStore)?.backend.transaction { database in
            try await database.run("DROP TABLE redemption_daily")
            try await database.run("DELETE FROM schema_migrations WHERE version = 21")
        }
        try await store.close()
        let (reopened, _) = try await Backend.sqlite.open(path: path)
        let sql = try #require(reopened as? SQLOfferStore)
        // The back-fill's rows are the ones the writes kept (those whose counts all fell to zero aside).
        #expect(try await rollupRows(sql) == kept)
        for (from, to) in windows(start: start, days: 5, using: &generator) {
            try await check(reopened, OutcomeQuery(from: from, to: to, bundleIdentifier: app), start: start)
        }
        try await reopened.close()
    }

    /// The rollup's rows with redemptions, as text.
    private func rollupRows(_ store: SQLOfferStore) async throws -> [String] {
        try await store.backend.reading { database in
            try await database.raw(
                """
                SELECT day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency, redeemed,
                    attributed, renewed, refunded, priced, milliunits
                FROM redemption_daily WHERE redeemed > 0
                ORDER BY day, environment, product_identifier, offer_identifier, offer_type, channel, currency
                """
            ).all(decoding: RedemptionRollup.Row.self)
        }.map { row in "\(row.key) \(row.counts)" }
    }

    private struct DirectRow: Decodable {
        var productIdentifier: String, offerIdentifier: String, offerType: Int64, channel: String, day: Int64
        var redeemed: Int, attributed: Int, renewed: Int, refunded: Int
        var currency: String?, milliunits: Int64?
        enum CodingKeys: String, CodingKey {
            case productIdentifier = "product_identifier"
            case offerIdentifier = "offer_identifier"
            case offerType = "offer_type"
            case channel, day, redeemed, attributed, renewed, refunded, currency, milliunits
        }
    }
}
