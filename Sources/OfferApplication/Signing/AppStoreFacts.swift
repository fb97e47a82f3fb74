import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import Metrics
import OfferEligibility
import OfferErrors
import OfferModel
import OfferStore

/// Who the facts fetched from the App Store are filed under.
enum AppStoreFactsOwner: Sendable, Hashable {
    /// The customer the request names. Apple's answer is attached only if it can be theirs, by the rule signed
    /// transactions follow: no transaction in it carries another customer's appAccountToken, and, unless one carries
    /// this customer's, no original transaction in it is already claimed by another customer of the app.
    case customer(CustomerKey)
    /// The customer the answer names (its appAccountToken, else the one notifications would file it under): for
    /// retention requests, which the App Store itself signs.
    case answer
}

/// A question to the App Store Server API on behalf of one request: which transaction, for whom.
struct AppStoreLookup: Sendable, Hashable {
    /// Any transaction identifier of the customer (the request's `transactionId`, a signed transaction's or the
    /// retention request's `originalTransactionId`).
    var transactionId: String
    /// Who the answer is filed under.
    var owner: AppStoreFactsOwner
    /// The request field that carried the identifier; errors name it.
    var field: String
    /// Ask even when the store has facts for the customer (introductory eligibility for a transaction the store
    /// does not know; an admin's refresh).
    var evenWhenFactsKnown = false
    /// What to do when the App Store cannot be asked; `nil` follows the policy's `appStoreUnavailable`.
    var whenUnavailable: OfferPolicy.AppStoreUnavailable?
}

/// What became of a lookup.
enum AppStoreLookupOutcome: Sendable, Hashable {
    /// Not asked: no client for the app, no store, or the store already has the facts.
    case notAsked
    /// Asked, verified, bound to the customer and stored; the original transactions it holds.
    case stored(CustomerKey, originalTransactionIds: Set<String>)
    /// The App Store knows no subscription for the transaction: the customer is new to it.
    case notFound
    /// The App Store could not be asked and the policy says to decide on what the store has.
    case decidedFromStore
}

extension SigningPipeline {
    private static let appStoreLogger = Logger(label: "offer-signer.app-store-facts")

    /// A JWS's `transactionId` the store knows as another customer's original transaction is not this customer's to
    /// present: an offer is not signed under another customer's subscription, as a signed transaction cannot move
    /// one. The store links original transactions only; any other identifier passes, and the App Store checks it
    /// against the purchaser.
    /// - Throws: ``OfferServiceError`` 409 `transaction_claimed`, 503 `store_unavailable`.
    func refuseAnotherCustomersTransaction(_ lookup: AppStoreLookup, app: AppConfiguration) async throws(OfferServiceError) {
        guard let store, case .customer(let customer) = lookup.owner else { return }
        let owners = try await storeCall { try await store.customers(withOriginalTransactionId: lookup.transactionId) }
            .filter { $0.bundleIdentifier == app.bundleIdentifier }
        guard owners.isEmpty || owners.contains(customer) else {
            throw OfferServiceError(
                .transactionClaimed,
                """
                \(lookup.field) names a subscription already claimed by another customer of \(app.bundleIdentifier); send one of this \
                customer's own transactions, or none.
                """,
                field: lookup.field
            )
        }
    }

    /// The pipeline's one step that completes the store from the App Store Server API: when the customer has no
    /// subscription facts (none at all, or none in the offer's group) and the request carries a transaction
    /// identifier, asks Apple (statuses and history, within the client's time budget: the request never waits
    /// longer because of Apple), checks that the answer can be this customer's, folds it into the customer's facts
    /// in the store — the store stays the source of truth, so the next request asks nothing — and lets the
    /// pipeline decide on them.
    ///
    /// Shared by every flow: ``run(_:now:)`` calls it for the offer and retention flows, introductory eligibility
    /// for a transaction the store does not know, and the eligibility listing before it reads the facts.
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` (not a transaction identifier), 403 `customer_mismatch`,
    ///   409 `transaction_claimed`, 503 `app_store_unavailable` (the policy's `refuse`) or `store_unavailable`.
    func fetchMissingFacts(
        _ lookup: AppStoreLookup,
        app: AppConfiguration,
        subscriptionGroupIdentifier: String?
    ) async throws(OfferServiceError) -> AppStoreLookupOutcome {
        guard let client = appStoreClients[app.bundleIdentifier], let store else { return .notAsked }
        if !lookup.evenWhenFactsKnown, case .customer(let key) = lookup.owner {
            let facts = try await storeCall { try await store.customerFacts(for: key) }
            if let facts, Self.hasSubscriptionFacts(facts, inGroup: subscriptionGroupIdentifier) { return .notAsked }
        }
        let fetched: FetchedSubscriptionFacts
        do {
            fetched = try await client.facts(forTransaction: lookup.transactionId, includeHistory: true)
        } catch {
            switch error.code {
            case .notFound:
                Self.countLookup("not_found")
                return .notFound
            case .invalidTransactionIdentifier:
                Self.countLookup("invalid_transaction_identifier")
                throw OfferServiceError.invalidRequest(
                    field: lookup.field,
                    "\(lookup.field) is not a transaction identifier the App Store issues: 1 to 32 decimal digits."
                )
            default:
                return try appStoreUnavailable(error, app: app, whenUnavailable: lookup.whenUnavailable)
            }
        }
        let transactions = fetched.statuses.lastTransactions.map(\.transaction) + (fetched.history?.transactions ?? [])
        guard !transactions.isEmpty else {
            Self.countLookup("no_subscription")
            return .notFound
        }
        let originals = Set(transactions.compactMap(\.originalTransactionId))
        let key: CustomerKey
        switch lookup.owner {
        case .customer(let customer):
            try await requireAnswerBelongs(to: customer, transactions: transactions, originals: originals, app: app, field: lookup.field)
            key = customer
        case .answer:
            let anchor = transactions.first { $0.originalTransactionId == lookup.transactionId } ?? transactions[0]
            guard notifications != nil else { return .notAsked }
            let binding = try await storeCall { () async throws -> CustomerBinding? in
                let binding = try await CustomerBinding.resolve(
                    anchor,
                    bundleIdentifier: app.bundleIdentifier,
                    store: store,
                    tokens: notifications?.tokenRule ?? .uuid
                )
                try await binding?.report(source: "app_store_answer", store: store, logger: Self.appStoreLogger)
                return binding
            }
            guard let binding else {
                Self.countLookup("no_subscription")
                return .notFound
            }
            key = binding.key
        }
        // The write claims every original transaction of the answer for the customer (one owner each, checked in
        // the write's transaction): a concurrent claim by another customer refuses this one, 409.
        let claims = CustomerBinding.claims(
            transactions,
            for: key,
            environment: fetched.environment.rawValue,
            tokens: notifications?.tokenRule ?? .uuid
        )
        try await storeCall { () async throws -> Void in
            do {
                _ = try await store.updateCustomer(key, claiming: claims) { facts in fetched.fold(into: &facts) }
            } catch let error as OfferStoreError where error.code == .transactionClaimed {
                Self.countLookup("refused_claimed")
                try? await CustomerBinding(key: key, refused: key, conflict: .transactionClaimed).report(
                    source: "app_store_answer",
                    store: store,
                    logger: Self.appStoreLogger
                )
                throw OfferServiceError(
                    .transactionClaimed,
                    """
                    This subscription's original transaction is already claimed by another customer of this app; the App Store's answer was not \
                    attached to this customer. Set appAccountToken on purchases to tie them to your accounts.
                    """,
                    field: lookup.field
                )
            }
        }
        // The answer's offers and renewals for the outcome report, after the request: a history holds up to a
        // write per transaction, which the request (a retention deadline among them) must not wait for.
        let outcomes = notifications?.outcomes ?? OutcomeRecorder(store: store, logger: Self.appStoreLogger)
        Task { await outcomes.recordQuietly(transactions, customer: key, source: "app_store_answer") }
        Self.countLookup("stored")
        Self.appStoreLogger.info(
            "facts fetched from the App Store and stored",
            metadata: [
                "bundleIdentifier": "\(app.bundleIdentifier)", "customer": "\(CustomerHash.of(key))",
                "app_store_environment": "\(fetched.environment.rawValue)", "subscriptions": "\(fetched.statuses.lastTransactions.count)",
            ]
        )
        return .stored(key, originalTransactionIds: originals)
    }

    /// Apple's answer for a transaction the request presented is attached to the request's customer only as a
    /// signed transaction would be (``NotificationIngestor/ingest(signedTransaction:for:)``).
    private func requireAnswerBelongs(
        to customer: CustomerKey,
        transactions: [JWSTransactionDecodedPayload],
        originals: Set<String>,
        app: AppConfiguration,
        field: String
    ) async throws(OfferServiceError) {
        let tokens = Set(transactions.compactMap { $0.appAccountToken?.lowercased() }.filter { !$0.isEmpty })
        if tokens.contains(where: { $0 != customer.applicationUsername }) {
            Self.countLookup("refused_other_customer")
            throw OfferServiceError(
                .customerMismatch,
                """
                The App Store says this transaction belongs to another customer (its appAccountToken is not this applicationUsername); nothing \
                was attached to this customer.
                """,
                field: field
            )
        }
        guard !tokens.contains(customer.applicationUsername), let store else { return }
        for original in originals.sorted() {
            let owners = try await storeCall { try await store.customers(withOriginalTransactionId: original) }
                .filter { $0.bundleIdentifier == app.bundleIdentifier }
            if !owners.isEmpty, !owners.contains(customer) {
                Self.countLookup("refused_claimed")
                throw OfferServiceError(
                    .transactionClaimed,
                    """
                    This subscription's original transaction is already claimed by another customer of this app; the App Store's answer was not \
                    attached to this customer. Set appAccountToken on purchases to tie them to your accounts.
                    """,
                    field: field
                )
            }
        }
    }

    /// No usable answer: refuse (503 `app_store_unavailable`) or decide on the store, as the policy says.
    private func appStoreUnavailable(
        _ error: AppStoreServerAPIError,
        app: AppConfiguration,
        whenUnavailable: OfferPolicy.AppStoreUnavailable?
    ) throws(OfferServiceError) -> AppStoreLookupOutcome {
        let transient = error.code == .appStoreUnavailable || error.code == .rateLimited
        let metadata: Logger.Metadata = [
            "bundleIdentifier": "\(app.bundleIdentifier)", "code": "\(error.code.rawValue)", "reason": "\(error.message)",
        ]
        if transient {
            Self.appStoreLogger.warning("the App Store Server API could not be asked in time", metadata: metadata)
        } else {
            Self.appStoreLogger.error(
                "the App Store Server API gave no usable answer; check its key, issuer ID and trusted roots",
                metadata: metadata
            )
        }
        switch whenUnavailable ?? policy?.appStoreUnavailable ?? .refuse {
        case .refuse:
            Self.countLookup("unavailable_refused")
            throw OfferServiceError(
                .appStoreUnavailable,
                """
                The store knows no subscription of this customer and the App Store could not be asked in time (\(error.message)); nothing was \
                decided. Try again shortly.
                """
            )
        case .allowFromStore:
            Self.countLookup("unavailable_decided_from_store")
            return .decidedFromStore
        }
    }

    /// Whether the store's facts say anything about the customer's subscription (in the group, when one is given).
    static func hasSubscriptionFacts(_ facts: CustomerFacts, inGroup group: String?) -> Bool {
        guard let group else { return !facts.subscriptions.isEmpty }
        return facts.subscription(inGroup: group) != nil
    }

    /// `offer_signer_app_store_lookups_total{outcome}`.
    static func countLookup(_ outcome: String) {
        Counter(label: "offer_signer_app_store_lookups_total", dimensions: [("outcome", outcome)]).increment()
    }

    /// Asks the App Store again for every original transaction the store knows of `key` and stores the folded
    /// facts (`POST /admin/customers/{bundleIdentifier}/{applicationUsername}/refresh`). Answers cached by the client
    /// within its cache TTL are reused.
    /// - Returns: the customer's facts after the refresh.
    /// - Throws: ``OfferServiceError`` 404 `unknown_app` / `unknown_transaction` (no original transaction known), 503
    ///   `app_store_api_not_configured` / `app_store_unavailable` / `store_unavailable`, 403 `customer_mismatch`.
    public func refreshFromAppStore(_ key: CustomerKey) async throws(OfferServiceError) -> CustomerFacts {
        let app = try app(named: key.bundleIdentifier)
        guard let store else { throw OfferServiceError.storeUnavailable }
        guard appStoreClients[app.bundleIdentifier] != nil else {
            throw OfferServiceError(
                .appStoreNotConfigured,
                """
                The App Store Server API is not configured for \(app.bundleIdentifier): set OFFER_SIGNER_APP_STORE_API_KEY_ID (and the key \
                file) and OFFER_SIGNER_ISSUER_ID; see docs/app-store-api.md.
                """
            )
        }
        let facts = try await storeCall { try await store.customerFacts(for: key) }
        let originals = Set(facts?.subscriptions.compactMap(\.originalTransactionId) ?? [])
        guard !originals.isEmpty else {
            throw OfferServiceError(
                .unknownTransaction,
                """
                The store knows no original transaction of this customer, so there is nothing to ask the App Store about. A sign request with \
                the customer's transactionId, or their signedTransaction, links one.
                """
            )
        }
        for original in originals.sorted() {
            let outcome = try await fetchMissingFacts(
                AppStoreLookup(
                    transactionId: original,
                    owner: .customer(key),
                    field: "originalTransactionId",
                    evenWhenFactsKnown: true,
                    whenUnavailable: .refuse
                ),
                app: app,
                subscriptionGroupIdentifier: nil
            )
            if outcome == .notFound {
                Self.appStoreLogger.notice(
                    "the App Store does not know an original transaction the store holds",
                    metadata: ["customer": "\(CustomerHash.of(key))"]
                )
            }
        }
        return try await storeCall { try await store.customerFacts(for: key) } ?? CustomerFacts(key: key)
    }
}
