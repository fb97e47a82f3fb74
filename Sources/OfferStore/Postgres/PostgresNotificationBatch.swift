import Foundation
import Logging
import NIOCore
import OfferModel
import PostgresNIO

/// PostgreSQL's batch of App Store notifications (``SQLOfferStore/fileNotifications(_:backend:)``): the whole batch in
/// one transaction of four round trips — `BEGIN`, one call of ``lockFunction``, one call of ``writeFunction``,
/// `COMMIT` — instead of some twenty statements a notification, each serialized by SQLKit and a round trip of its own.
/// Both calls are prepared statements whose text never changes, the batch bound as arrays (schema version 23 creates
/// the functions).
///
/// 1. ``lockFunction``, in the batch's order: each `notificationUUID` recorded as processed (`false`: seen before),
///    and for each one that was new its customer's row locked (`FOR UPDATE`, a placeholder inserted for a customer the
///    store has not heard of) and its facts returned.
/// 2. Here: each new notification's fold over its customer's facts (over what the batch's notifications before it
///    folded, for a customer twice in the batch), each customer's facts written once, as the last fold left them.
/// 3. ``writeFunction``: the original transactions claimed, the facts written and their original transactions indexed,
///    the subscription transactions upserted, then each redemption recorded under its subscription's advisory lock,
///    attributed and counted into `redemption_daily`; one row a redemption says whether it was recorded, and its
///    channel.
///
/// This is what the statement-by-statement filing writes, in the same order of locks, for the batches it can do
/// alike (``fits(_:)``): no subscription event; an original transaction claimed by one customer of the batch only; a
/// subscription transaction, or a redemption of a subscription, twice only as the same values (a notification
/// delivered twice: the second is told it was seen, its redemption that it was recorded before). Whatever it cannot
/// do alike — a fold that throws, a subscription another customer holds, a redemption of a subscription with
/// outcomes recorded before (a later period, an event that came first), a subscription two customers of the batch
/// hold — makes it throw: its transaction is rolled back and the caller files the batch one notification at a time,
/// each behind its savepoint.
enum PostgresNotificationBatch {
    /// Whether the batch can be filed here (see the type's documentation): no subscription event, no original
    /// transaction claimed by two customers, no subscription transaction or redeemed subscription twice with other
    /// values.
    static func fits(_ batch: [PendingFiling]) -> Bool {
        var claimed: [[String]: CustomerKey] = [:]
        var transactions: [[String]: SubscriptionTransaction] = [:]
        var redemptions: [[String]: Redemption] = [:]
        for pending in batch {
            let filing = pending.filing
            guard filing.event == nil else { return false }
            for claim in Set(filing.claims) {
                let key = [filing.customer.bundleIdentifier, claim.environment, claim.originalTransactionId]
                guard claimed.updateValue(filing.customer, forKey: key).map({ $0 == filing.customer }) ?? true else { return false }
            }
            if let transaction = filing.transaction {
                let key = [transaction.environment, transaction.transactionId]
                guard transactions.updateValue(transaction, forKey: key).map({ $0 == transaction }) ?? true else { return false }
            }
            if let redemption = filing.redemption {
                let key = [redemption.environment, redemption.originalTransactionId]
                guard redemptions.updateValue(redemption, forKey: key).map({ $0 == redemption }) ?? true else { return false }
            }
        }
        return true
    }

    /// Files `batch` inside the caller's transaction on `connection`; one outcome a notification, in order.
    /// - Throws: when the batch cannot be filed alike (the caller rolls back and files it one by one), or the database's error.
    static func file(_ batch: [PendingFiling], connection: PostgresConnection) async throws -> [NotificationFiled] {
        let now = Date().unixMilliseconds
        let lock = Lock(
            uuids: batch.map(\.filing.notificationUUID),
            bundles: batch.map(\.filing.customer.bundleIdentifier),
            users: batch.map(\.filing.customer.applicationUsername),
            placeholders: try batch.map { try StoreCoding.encode(CustomerFacts(key: $0.filing.customer)) },
            now: now
        )
        var locked: [(applied: Bool, facts: String?, placeholder: Bool)] = []
        locked.reserveCapacity(batch.count)
        for try await row in try await execute(lock, on: connection) { locked.append(row) }
        guard locked.count == batch.count else {
            throw OfferStoreError(.unavailable, "PostgreSQL store: the notifications' batch was not locked whole.")
        }

        var write = Write(now: now)
        // Each customer's facts as its notifications so far left them (a customer twice in the batch folds on), and
        // where each original transaction was first indexed, and for whom.
        var current: [CustomerKey: CustomerFacts] = [:]
        var written: [CustomerKey] = []
        var indexed: [String: (position: Int, customer: CustomerKey)] = [:]
        for (position, (pending, row)) in zip(batch, locked).enumerated() where row.applied {
            let filing = pending.filing
            let key = filing.customer
            var folded: CustomerFacts
            if let facts = current[key] {
                folded = facts
            } else {
                folded =
                    try (row.placeholder ? nil : row.facts.map { try StoreCoding.decodeFacts($0) }) ?? CustomerFacts(key: key)
                written.append(key)
            }
            try filing.fold(&folded)
            for claim in Set(filing.claims).sorted(by: { ($0.environment, $0.originalTransactionId) < ($1.environment, $1.originalTransactionId) }) {
                write.claim(claim, for: key)
            }
            folded.key = key
            folded.updatedAt = Date()
            current[key] = folded
            for original in Set(folded.subscriptions.compactMap(\.originalTransactionId)).sorted() {
                let index = key.bundleIdentifier + "\u{1F}" + original
                if let first = indexed[index] {
                    // An original transaction two customers of the batch hold: their redemptions' attribution reads both.
                    guard first.customer == key else {
                        throw OfferStoreError(.unavailable, "PostgreSQL store: two customers of the batch hold one subscription.")
                    }
                    continue
                }
                indexed[index] = (position, key)
                write.index(original, of: key)
            }
        }
        for key in written {
            guard let facts = current[key] else { continue }
            write.facts(try StoreCoding.encode(facts), of: key, at: facts.updatedAt.unixMilliseconds)
        }
        var transactions = Set<SubscriptionTransaction>()
        for (position, pending) in batch.enumerated() {
            if let transaction = pending.filing.transaction, transactions.insert(transaction).inserted { write.transaction(transaction) }
            if let redemption = pending.filing.redemption {
                // Attributed one by one, a redemption would not see the index a later notification of another customer writes.
                let index = redemption.customer.bundleIdentifier + "\u{1F}" + redemption.originalTransactionId
                if let first = indexed[index], first.position > position, first.customer != redemption.customer {
                    throw OfferStoreError(.unavailable, "PostgreSQL store: a redemption of the batch is indexed after it.")
                }
                write.redemption(redemption)
            }
        }
        var recorded: [RedemptionRecording] = []
        for try await (inserted, channel) in try await execute(write, on: connection) {
            recorded.append(inserted ? .recorded(channel: channel) : .duplicate)
        }
        guard recorded.count == write.redemptions else {
            throw OfferStoreError(.unavailable, "PostgreSQL store: the notifications' batch did not record every redemption.")
        }
        var next = recorded.makeIterator()
        return zip(batch, locked).map { pending, row in
            NotificationFiled(applied: row.applied, redemption: pending.filing.redemption == nil ? nil : next.next())
        }
    }

    /// Runs the statements with an empty batch on `connection` (they write nothing), so that it has them prepared
    /// before the first burst (``PostgresBackend/warmUp()``).
    static func prepare(on connection: PostgresConnection, logger: Logger) async throws {
        for try await _ in try await connection.execute(Lock(uuids: [], bundles: [], users: [], placeholders: [], now: 0), logger: logger) {}
        for try await _ in try await connection.execute(Write(now: 0), logger: logger) {}
    }

    /// Refuses a statement on a connection that has closed: postgres-nio would send it to no one, and never answer
    /// (``PostgresConnection/executeIfOpen(_:logger:)``).
    private static func execute<Statement: PostgresPreparedStatement>(
        _ statement: Statement,
        on connection: PostgresConnection
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Statement.Row> {
        try await connection.executeIfOpen(statement, logger: statementLogger)
    }

    private static let statementLogger = Logger(label: "offer-signer.postgres.batch", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The first key of the advisory lock on a subscription's outcomes (``PostgresBackend/lockSubscriptionOutcomes``).
    static let outcomesLockNamespace = 72_453_652

    /// The function schema version 23 creates for step 1 (the type's documentation): one row a notification, in order.
    static let lockFunction = """
        CREATE OR REPLACE FUNCTION offer_signer_notifications_lock(TEXT[], TEXT[], TEXT[], TEXT[], BIGINT)
        RETURNS TABLE (was_new BOOLEAN, stored_facts TEXT, was_placeholder BOOLEAN) LANGUAGE plpgsql VOLATILE AS $$
        BEGIN
            FOR i IN 1 .. coalesce(array_length($1, 1), 0) LOOP
                INSERT INTO processed_notifications (notification_uuid, processed_at) VALUES ($1[i], $5)
                    ON CONFLICT (notification_uuid) DO NOTHING;
                was_new := FOUND;
                stored_facts := NULL;
                was_placeholder := false;
                IF was_new THEN
                    INSERT INTO customers (bundle_identifier, application_username, facts, updated_at) VALUES ($2[i], $3[i], $4[i], $5)
                        ON CONFLICT (bundle_identifier, application_username) DO NOTHING;
                    was_placeholder := FOUND;
                    SELECT c.facts INTO stored_facts FROM customers c
                        WHERE c.bundle_identifier = $2[i] AND c.application_username = $3[i] FOR UPDATE;
                END IF;
                RETURN NEXT;
            END LOOP;
        END $$
        """

    /// The function schema version 23 creates for step 3 (the type's documentation): one row a redemption, in order.
    /// A claim it cannot make, or a redemption of a subscription with outcomes recorded before, raises an error.
    static let writeFunction = """
        CREATE OR REPLACE FUNCTION offer_signer_notifications_write(
            TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT,
            TEXT[], TEXT[], TEXT[], BIGINT[],
            TEXT[], TEXT[], TEXT[],
            TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], BIGINT[], BIGINT[], BIGINT[],
            TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], TEXT[], BIGINT[], TEXT[], TEXT[], BIGINT[], BIGINT[])
        RETURNS TABLE (redemption_recorded BOOLEAN, redemption_channel TEXT) LANGUAGE plpgsql VOLATILE AS $$
        DECLARE
            holder TEXT;
            sig_nonce TEXT;
            sig_at BIGINT;
            sig_channel TEXT;
            chosen TEXT;
        BEGIN
            FOR i IN 1 .. coalesce(array_length($1, 1), 0) LOOP
                INSERT INTO transaction_owners (bundle_identifier, environment, original_transaction_id, application_username, claimed_at)
                    VALUES ($1[i], $3[i], $4[i], $2[i], $6)
                    ON CONFLICT (bundle_identifier, environment, original_transaction_id) DO NOTHING;
                CONTINUE WHEN FOUND;
                SELECT o.application_username INTO holder FROM transaction_owners o
                    WHERE o.bundle_identifier = $1[i] AND o.environment = $3[i] AND o.original_transaction_id = $4[i];
                CONTINUE WHEN holder = $2[i];
                IF $5[i] IS NOT NULL AND holder = $5[i] THEN
                    UPDATE transaction_owners o SET application_username = $2[i], claimed_at = $6
                        WHERE o.bundle_identifier = $1[i] AND o.environment = $3[i] AND o.original_transaction_id = $4[i]
                        AND o.application_username = $5[i];
                    CONTINUE WHEN FOUND;
                END IF;
                RAISE EXCEPTION 'a subscription of the batch is claimed by another customer';
            END LOOP;
            UPDATE customers c SET facts = f.facts, updated_at = f.at FROM unnest($7, $8, $9, $10) AS f(b, u, facts, at)
                WHERE c.bundle_identifier = f.b AND c.application_username = f.u;
            INSERT INTO customer_transactions (original_transaction_id, bundle_identifier, application_username)
                SELECT * FROM unnest($11, $12, $13) ON CONFLICT DO NOTHING;
            INSERT INTO subscription_transactions (environment, transaction_id, original_transaction_id, bundle_identifier,
                application_username, product_identifier, subscription_group_identifier, price, currency, purchase_date, expires_date,
                revocation_date, recorded_at)
                SELECT t.*, $6 FROM unnest($14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25) AS t
                ON CONFLICT (environment, transaction_id) DO UPDATE SET
                  revocation_date = COALESCE(subscription_transactions.revocation_date, excluded.revocation_date),
                  expires_date = COALESCE(excluded.expires_date, subscription_transactions.expires_date),
                  price = COALESCE(subscription_transactions.price, excluded.price),
                  currency = COALESCE(subscription_transactions.currency, excluded.currency);
            FOR i IN 1 .. coalesce(array_length($26, 1), 0) LOOP
                PERFORM pg_advisory_xact_lock(\(outcomesLockNamespace), hashtext($26[i] || ':' || $28[i]));
                redemption_recorded := false;
                redemption_channel := NULL;
                IF EXISTS (SELECT 1 FROM redemptions r WHERE r.environment = $26[i] AND r.transaction_id = $27[i]) THEN
                    RETURN NEXT;
                    CONTINUE;
                END IF;
                IF EXISTS (SELECT 1 FROM redemptions r WHERE r.environment = $26[i] AND r.original_transaction_id = $28[i])
                    OR EXISTS (SELECT 1 FROM subscription_events e WHERE e.environment = $26[i] AND e.original_transaction_id = $28[i]) THEN
                    RAISE EXCEPTION 'a subscription of the batch has outcomes recorded before';
                END IF;
                sig_nonce := NULL;
                sig_at := NULL;
                sig_channel := NULL;
                IF $40[i] <> 0 THEN
                    SELECT s.nonce, s.timestamp, s.channel INTO sig_nonce, sig_at, sig_channel FROM issued_signatures s
                        WHERE s.bundle_identifier = $29[i] AND s.product_identifier = $31[i] AND s.offer_identifier = $33[i]
                        AND s.timestamp <= $39[i] AND s.format <> 'introductory-eligibility'
                        AND s.application_username IN (SELECT t.application_username FROM customer_transactions t
                            WHERE t.original_transaction_id = $28[i] AND t.bundle_identifier = $29[i] UNION SELECT $30[i])
                        ORDER BY s.timestamp DESC, s.nonce LIMIT 1;
                END IF;
                chosen := CASE WHEN sig_nonce IS NULL THEN NULL WHEN sig_channel = 'retention' THEN 'retention' ELSE 'app' END;
                INSERT INTO redemptions (environment, transaction_id, original_transaction_id, bundle_identifier, application_username,
                    product_identifier, offer_type, offer_identifier, offer_discount_type, offer_period, price, currency, storefront,
                    purchase_date, recorded_at, signature_nonce, signature_timestamp, signature_channel, renewed_at, refunded_at, expired_at)
                    VALUES ($26[i], $27[i], $28[i], $29[i], $30[i], $31[i], $32[i], $33[i], $34[i], $35[i], $36[i], $37[i], $38[i], $39[i],
                    $6, sig_nonce, sig_at, chosen, NULL, NULL, NULL)
                    ON CONFLICT (environment, transaction_id) DO NOTHING;
                IF NOT FOUND THEN
                    RETURN NEXT;
                    CONTINUE;
                END IF;
                IF $39[i] >= 0 THEN
                    INSERT INTO redemption_daily (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type,
                        channel, currency, redeemed, attributed, renewed, refunded, priced, milliunits)
                        VALUES ($39[i] / 86400000, $26[i], $29[i], $31[i], $33[i], $32[i], COALESCE(chosen, 'app'), COALESCE($37[i], ''), 1,
                        CASE WHEN sig_nonce IS NULL THEN 0 ELSE 1 END, 0, 0, CASE WHEN $36[i] IS NULL THEN 0 ELSE 1 END, COALESCE($36[i], 0))
                        ON CONFLICT (day, environment, bundle_identifier, product_identifier, offer_identifier, offer_type, channel, currency)
                        DO UPDATE SET redeemed = redemption_daily.redeemed + excluded.redeemed,
                        attributed = redemption_daily.attributed + excluded.attributed, renewed = redemption_daily.renewed + excluded.renewed,
                        refunded = redemption_daily.refunded + excluded.refunded, priced = redemption_daily.priced + excluded.priced,
                        milliunits = redemption_daily.milliunits + excluded.milliunits;
                END IF;
                redemption_recorded := true;
                redemption_channel := chosen;
                RETURN NEXT;
            END LOOP;
        END $$
        """

    /// A call of ``lockFunction``: the batch's `notificationUUID`s, customers and placeholder facts, and now.
    struct Lock: PostgresPreparedStatement {
        static let name = "offer_signer_notifications_lock"
        static let sql = "SELECT was_new, stored_facts, was_placeholder FROM offer_signer_notifications_lock($1, $2, $3, $4, $5)"
        static var bindingDataTypes: [PostgresDataType] { [.textArray, .textArray, .textArray, .textArray, .int8] }
        var uuids: [String], bundles: [String], users: [String], placeholders: [String]
        var now: Int64
        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(uuids)
            bindings.append(bundles)
            bindings.append(users)
            bindings.append(placeholders)
            bindings.append(now)
            return bindings
        }
        func decodeRow(_ row: PostgresRow) throws -> (applied: Bool, facts: String?, placeholder: Bool) {
            let (applied, facts, placeholder) = try row.decode((Bool, String?, Bool).self)
            return (applied, facts, placeholder)
        }
    }

    /// A call of ``writeFunction``, built a notification at a time: forty arrays.
    struct Write: PostgresPreparedStatement {
        static let name = "offer_signer_notifications_write"
        static let sql = """
            SELECT redemption_recorded, redemption_channel FROM offer_signer_notifications_write(\
            \((1...40).map { "$\($0)" }.joined(separator: ", ")))
            """
        static var bindingDataTypes: [PostgresDataType] {
            Array(repeating: .textArray, count: 5) + [.int8] + Array(repeating: .textArray, count: 3) + [.int8Array]
                + Array(repeating: .textArray, count: 10) + [.int8Array, .textArray, .int8Array, .int8Array, .int8Array]
                + Array(repeating: .textArray, count: 6) + [.int8Array] + Array(repeating: .textArray, count: 3) + [.int8Array]
                + [.textArray, .textArray, .int8Array, .int8Array]
        }

        var now: Int64
        private var claimBundles: [String] = [], claimUsers: [String] = [], claimEnvironments: [String] = [], claimOriginals: [String] = []
        private var claimReplacing: [String?] = []
        private var factBundles: [String] = [], factUsers: [String] = [], factTexts: [String] = [], factTimes: [Int64] = []
        private var indexOriginals: [String] = [], indexBundles: [String] = [], indexUsers: [String] = []
        private var transactions: [SubscriptionTransaction] = []
        private var recorded: [Redemption] = []

        init(now: Int64) { self.now = now }

        /// How many redemptions the call records (one row each).
        var redemptions: Int { recorded.count }

        mutating func claim(_ claim: TransactionClaim, for key: CustomerKey) {
            claimBundles.append(key.bundleIdentifier)
            claimUsers.append(key.applicationUsername)
            claimEnvironments.append(claim.environment)
            claimOriginals.append(claim.originalTransactionId)
            claimReplacing.append(claim.replacing)
        }

        mutating func facts(_ text: String, of key: CustomerKey, at time: Int64) {
            factBundles.append(key.bundleIdentifier)
            factUsers.append(key.applicationUsername)
            factTexts.append(text)
            factTimes.append(time)
        }

        mutating func index(_ originalTransactionId: String, of key: CustomerKey) {
            indexOriginals.append(originalTransactionId)
            indexBundles.append(key.bundleIdentifier)
            indexUsers.append(key.applicationUsername)
        }

        mutating func transaction(_ transaction: SubscriptionTransaction) { transactions.append(transaction) }
        mutating func redemption(_ redemption: Redemption) { recorded.append(redemption) }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 40)
            bindings.append(claimBundles)
            bindings.append(claimUsers)
            bindings.append(claimEnvironments)
            bindings.append(claimOriginals)
            bindings.append(NullableTextArray(claimReplacing))
            bindings.append(now)
            bindings.append(factBundles)
            bindings.append(factUsers)
            bindings.append(factTexts)
            bindings.append(factTimes)
            bindings.append(indexOriginals)
            bindings.append(indexBundles)
            bindings.append(indexUsers)
            bindings.append(transactions.map(\.environment))
            bindings.append(transactions.map(\.transactionId))
            bindings.append(transactions.map(\.originalTransactionId))
            bindings.append(transactions.map(\.customer.bundleIdentifier))
            bindings.append(transactions.map(\.customer.applicationUsername))
            bindings.append(transactions.map(\.productIdentifier))
            bindings.append(transactions.map(\.subscriptionGroupIdentifier))
            bindings.append(NullableInt8Array(transactions.map(\.price)))
            bindings.append(NullableTextArray(transactions.map(\.currency)))
            bindings.append(transactions.map(\.purchaseDate))
            bindings.append(NullableInt8Array(transactions.map(\.expiresDate)))
            bindings.append(NullableInt8Array(transactions.map(\.revocationDate)))
            bindings.append(recorded.map(\.environment))
            bindings.append(recorded.map(\.transactionId))
            bindings.append(recorded.map(\.originalTransactionId))
            bindings.append(recorded.map(\.customer.bundleIdentifier))
            bindings.append(recorded.map(\.customer.applicationUsername))
            bindings.append(recorded.map(\.productIdentifier))
            bindings.append(recorded.map { Int64($0.offerType) })
            bindings.append(recorded.map { $0.offerIdentifier ?? "" })
            bindings.append(NullableTextArray(recorded.map(\.offerDiscountType)))
            bindings.append(NullableTextArray(recorded.map(\.offerPeriod)))
            bindings.append(NullableInt8Array(recorded.map(\.price)))
            bindings.append(NullableTextArray(recorded.map(\.currency)))
            bindings.append(NullableTextArray(recorded.map(\.storefront)))
            bindings.append(recorded.map(\.purchaseDate))
            bindings.append(recorded.map { Int64($0.attributable ? 1 : 0) })
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> (Bool, String?) { try row.decode((Bool, String?).self) }
    }
}

/// A `BIGINT[]` whose elements may be `NULL`, in the binary format (``NullableTextArray``'s kind).
struct NullableInt8Array: PostgresNonThrowingEncodable {
    var elements: [Int64?]
    init(_ elements: [Int64?]) { self.elements = elements }

    static var psqlType: PostgresDataType { .int8Array }
    static var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        buffer.writeNullableArray(elements, of: .int8) { element, buffer in
            buffer.writeInteger(Int32(8))
            buffer.writeInteger(element)
        }
    }
}
