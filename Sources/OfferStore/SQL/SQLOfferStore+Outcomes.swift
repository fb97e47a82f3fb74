import Foundation
import OfferModel
import SQLKit

/// Offer outcomes (docs/outcomes.md): redemptions recorded once per (environment, transaction) and attributed to the
/// latest signature issued before the purchase; subscription events and retention answers, each applied to the
/// other whichever arrives first, so deliveries in any order, and twice, give the same figures. Each write keeps
/// `redemption_daily` (``RedemptionRollup``) in step, in its transaction.
extension SQLOfferStore {
    func recordRedemption(_ redemption: Redemption) async throws -> RedemptionRecording {
        try await backend.transaction { [backend] database in try await Self.record(redemption, backend: backend, on: database) }
    }

    /// ``recordRedemption(_:)`` inside the caller's transaction.
    static func record(_ redemption: Redemption, backend: any SQLStoreBackend, on database: any SQLDatabase) async throws -> RedemptionRecording {
        try await backend.lockSubscriptionOutcomes(redemption.originalTransactionId, environment: redemption.environment, on: database)
        let seen = try await database.select().column("transaction_id").from("redemptions")
            .where("environment", .equal, redemption.environment).where("transaction_id", .equal, redemption.transactionId)
            .first()
        guard seen == nil else { return .duplicate }
        let rolledBefore = try await RedemptionRollup.contribution(
            of: redemption.originalTransactionId,
            environment: redemption.environment,
            on: database
        )
        let signature = redemption.attributable ? try await Self.attribution(of: redemption, on: database) : nil
        let events = try await Self.events(of: redemption.originalTransactionId, environment: redemption.environment, on: database)
        let after = events.filter { $0.at > redemption.purchaseDate }
        let renewed = after.filter { $0.kind == SubscriptionEvent.Kind.renewed.rawValue && $0.transactionId != redemption.transactionId }.map(
            \.at
        ).min()
        let refunded = events.filter { $0.kind == SubscriptionEvent.Kind.refunded.rawValue && $0.transactionId == redemption.transactionId }.map(
            \.at
        ).min()
        let expired = after.filter { $0.kind == SubscriptionEvent.Kind.expired.rawValue }.map(\.at).min()
        let channel = signature.map { $0.channel == "retention" ? "retention" : "app" }
        let values: [any SQLExpression] = [
            SQLBind(redemption.environment), SQLBind(redemption.transactionId), SQLBind(redemption.originalTransactionId),
            SQLBind(redemption.customer.bundleIdentifier), SQLBind(redemption.customer.applicationUsername),
            SQLBind(redemption.productIdentifier), SQLBind(Int64(redemption.offerType)), SQLBind(redemption.offerIdentifier ?? ""),
            SQLBind(redemption.offerDiscountType), SQLBind(redemption.offerPeriod), SQLBind(redemption.price),
            SQLBind(redemption.currency), SQLBind(redemption.storefront), SQLBind(redemption.purchaseDate),
            SQLBind(Date().unixMilliseconds), SQLBind(signature?.nonce), SQLBind(signature?.timestamp), SQLBind(channel),
            SQLBind(renewed), SQLBind(refunded), SQLBind(expired),
        ]
        let inserted = try await database.insert(into: "redemptions")
            .columns(
                "environment",
                "transaction_id",
                "original_transaction_id",
                "bundle_identifier",
                "application_username",
                "product_identifier",
                "offer_type",
                "offer_identifier",
                "offer_discount_type",
                "offer_period",
                "price",
                "currency",
                "storefront",
                "purchase_date",
                "recorded_at",
                "signature_nonce",
                "signature_timestamp",
                "signature_channel",
                "renewed_at",
                "refunded_at",
                "expired_at"
            )
            .values(values)
            .ignoringConflicts(with: ["environment", "transaction_id"]).returning("transaction_id").first()
        guard inserted != nil else { return .duplicate }
        let (continuing, absorbed) = try await Self.relink(
            redemption.originalTransactionId,
            environment: redemption.environment,
            inserted: redemption.transactionId,
            on: database
        )
        let rolledAfter = try await RedemptionRollup.contribution(
            of: redemption.originalTransactionId,
            environment: redemption.environment,
            on: database
        )
        try await RedemptionRollup.apply(before: rolledBefore, after: rolledAfter, on: database)
        if continuing.contains(redemption.transactionId) { return .continuation }
        return absorbed ? .firstPeriod(channel: channel) : .recorded(channel: channel)
    }

    func recordSubscriptionEvent(_ event: SubscriptionEvent) async throws -> Int {
        try await backend.transaction { [backend] database in try await Self.record(event, backend: backend, on: database) }
    }

    /// ``recordSubscriptionEvent(_:)`` inside the caller's transaction.
    static func record(_ event: SubscriptionEvent, backend: any SQLStoreBackend, on database: any SQLDatabase) async throws -> Int {
        try await backend.lockSubscriptionOutcomes(event.originalTransactionId, environment: event.environment, on: database)
        let rolledBefore = try await RedemptionRollup.contribution(of: event.originalTransactionId, environment: event.environment, on: database)
        try await database.insert(into: "subscription_events")
            .columns("environment", "original_transaction_id", "kind", "at", "transaction_id", "recorded_at")
            .values(
                SQLBind(event.environment),
                SQLBind(event.originalTransactionId),
                SQLBind(event.kind.rawValue),
                SQLBind(event.at),
                SQLBind(event.transactionId),
                SQLBind(Date().unixMilliseconds)
            )
            .ignoringConflicts(with: ["original_transaction_id", "environment", "kind", "transaction_id", "at"]).run()
        var changed = 0
        switch event.kind {
        case .renewed:
            changed += try await Self.setEarliest("renewed_at", to: event.at, in: "redemptions", on: database) { update in
                update.where("original_transaction_id", .equal, event.originalTransactionId).where("environment", .equal, event.environment)
                    .where("purchase_date", .lessThan, event.at).where("transaction_id", .notEqual, event.transactionId)
            }
            changed += try await Self.markSaved(event, on: database)
        case .autoRenewEnabled:
            changed += try await Self.markSaved(event, on: database)
        case .refunded:
            changed += try await Self.setEarliest("refunded_at", to: event.at, in: "redemptions", on: database) { update in
                update.where("environment", .equal, event.environment).where("transaction_id", .equal, event.transactionId)
            }
        case .expired:
            changed += try await Self.setEarliest("expired_at", to: event.at, in: "redemptions", on: database) { update in
                update.where("original_transaction_id", .equal, event.originalTransactionId).where("environment", .equal, event.environment)
                    .where("purchase_date", .lessThan, event.at)
            }
        }
        if event.kind == .renewed || event.kind == .expired {
            _ = try await Self.relink(event.originalTransactionId, environment: event.environment, on: database)
        }
        let rolledAfter = try await RedemptionRollup.contribution(of: event.originalTransactionId, environment: event.environment, on: database)
        try await RedemptionRollup.apply(before: rolledBefore, after: rolledAfter, on: database)
        return changed
    }

    func purgeSubscriptionEvents(recordedBefore: Date) async throws -> Int {
        try await backend.transaction { database in
            try await database.delete(from: "subscription_events")
                .where("recorded_at", .lessThan, SQLBind(recordedBefore.unixMilliseconds)).returning("kind").all().count
        }
    }

    /// Links a subscription's offer transactions into redemptions, whichever order they were recorded in: a
    /// transaction with the same offer as the one before it (by purchase date), which was neither renewed at full
    /// price nor expired by then, is a later period of the same redemption (a pay-as-you-go offer), and names its
    /// first period in `period_of`; the others are redemptions (`NULL`). Returns the transactions that are later
    /// periods, and whether a transaction counted as a redemption before (other than `inserted`, just written) is
    /// one no longer.
    private static func relink(
        _ originalTransactionId: String,
        environment: String,
        inserted: String? = nil,
        on database: any SQLDatabase
    ) async throws -> (continuing: Set<String>, absorbed: Bool) {
        let rows = try await database.select().columns(
            "transaction_id",
            "offer_type",
            "offer_identifier",
            "purchase_date",
            "renewed_at",
            "expired_at",
            "period_of"
        )
        .from("redemptions").where("original_transaction_id", .equal, originalTransactionId).where("environment", .equal, environment)
        .orderBy("purchase_date").orderBy("transaction_id")
        .all(decoding: PeriodRow.self, keyDecodingStrategy: .convertFromSnakeCase)
        var continuing: Set<String> = []
        var absorbed = false
        var last: [String: (row: PeriodRow, first: String)] = [:]
        for row in rows {
            let offer = "\(row.offerType)|\(row.offerIdentifier)"
            var first: String?
            if let previous = last[offer], previous.row.renewedAt.map({ $0 > row.purchaseDate }) ?? true,
                previous.row.expiredAt.map({ $0 > row.purchaseDate }) ?? true, previous.row.purchaseDate < row.purchaseDate
            {
                first = previous.first
            }
            last[offer] = (row, first ?? row.transactionId)
            if first != nil {
                continuing.insert(row.transactionId)
                if row.periodOf == nil && row.transactionId != inserted { absorbed = true }
            }
            guard row.periodOf != first else { continue }
            try await database.update("redemptions").set("period_of", to: SQLBind(first))
                .where("environment", .equal, environment).where("transaction_id", .equal, row.transactionId).run()
        }
        return (continuing, absorbed)
    }

    /// The signature a redemption is attributed to: of the same app, product and offer, issued at or before the
    /// purchase, to the redemption's customer or to any customer the store files its original transaction under
    /// (a JWS signature for that transaction, a retention answer about it); the latest wins. Introductory-offer
    /// eligibility signatures never count.
    private static func attribution(of redemption: Redemption, on database: any SQLDatabase) async throws -> AttributedSignature? {
        let bundle = redemption.customer.bundleIdentifier
        let query: SQLQueryString = """
            SELECT nonce, timestamp, channel FROM issued_signatures
            WHERE bundle_identifier = \(bind: bundle) AND product_identifier = \(bind: redemption.productIdentifier)
              AND offer_identifier = \(bind: redemption.offerIdentifier ?? "") AND timestamp <= \(bind: redemption.purchaseDate)
              AND format <> 'introductory-eligibility'
              AND application_username IN (
                SELECT application_username FROM customer_transactions
                WHERE original_transaction_id = \(bind: redemption.originalTransactionId) AND bundle_identifier = \(bind: bundle)
                UNION SELECT \(bind: redemption.customer.applicationUsername))
            ORDER BY timestamp DESC, nonce LIMIT 1
            """
        return try await database.raw(query).first(decoding: AttributedSignature.self)
    }

    /// The subscription events recorded for an original transaction.
    private static func events(of originalTransactionId: String, environment: String, on database: any SQLDatabase) async throws -> [EventRow] {
        try await database.select().columns("kind", "at", "transaction_id").from("subscription_events")
            .where("original_transaction_id", .equal, originalTransactionId).where("environment", .equal, environment)
            .all(decoding: EventRow.self, keyDecodingStrategy: .convertFromSnakeCase)
    }

    /// Sets a time column to `at` on the rows `narrow` selects where it is unset or later; returns how many changed
    /// (of redemptions, those that are not a later period of another).
    private static func setEarliest(
        _ column: String,
        to at: Int64,
        in table: String,
        on database: any SQLDatabase,
        _ narrow: (SQLUpdateBuilder) -> SQLUpdateBuilder
    ) async throws -> Int {
        let update = narrow(database.update(table).set(SQLIdentifier(column), to: SQLBind(at)))
            .where(group: { $0.where(SQLIdentifier(column), .is, SQLLiteral.null).orWhere(SQLIdentifier(column), .greaterThan, SQLBind(at)) })
        guard table == "redemptions" else { return try await update.returning(SQLIdentifier(column)).all().count }
        // A later period of a redemption changes with it, and is not counted apart.
        return try await update.returning("period_of").all().filter { (try? $0.decodeNil(column: "period_of")) ?? true }.count
    }

    /// A renewal or auto-renew turned back on saves the retention answers given for the subscription before it.
    private static func markSaved(_ event: SubscriptionEvent, on database: any SQLDatabase) async throws -> Int {
        try await setEarliest("saved_at", to: event.at, in: "retention_answers", on: database) { update in
            update.where("original_transaction_id", .equal, event.originalTransactionId).where("environment", .equal, event.environment)
                .where("answered_at", .lessThanOrEqual, event.at)
        }
    }

    private struct AttributedSignature: Decodable, Sendable {
        var nonce: String, timestamp: Int64, channel: String
    }

    private struct PeriodRow: Decodable, Sendable {
        var transactionId: String, offerType: Int64, offerIdentifier: String, purchaseDate: Int64
        var renewedAt: Int64?, expiredAt: Int64?, periodOf: String?
    }

    private struct EventRow: Decodable, Sendable {
        var kind: String, at: Int64, transactionId: String
    }
}
