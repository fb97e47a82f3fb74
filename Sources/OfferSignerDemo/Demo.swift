import AppStoreNotifications
import Foundation
import OfferApplication
import OfferModel
import OfferSignerServer
public import X509

/// What `serve --demo` signs App Store data with: a certificate chain generated at start-up, shaped like
/// Apple's, whose root the demo trusts (and nothing else). It lets a newcomer move a demo customer between
/// cohorts with a signed notification — verified by the real notification endpoint — and try the retention
/// endpoint, without an App Store account. The executable makes it (from the test-support chain); the server
/// only uses it.
public struct DemoAppStore: Sendable {
    /// The root of the chain; the demo's only trusted root.
    public let root: Certificate
    /// Signs a payload as the App Store does: ES256 with the chain in `x5c`.
    public let sign: @Sendable (any Encodable & Sendable) async throws -> String

    public init(root: Certificate, sign: @escaping @Sendable (any Encodable & Sendable) async throws -> String) {
        self.root = root
        self.sign = sign
    }
}

/// The demo's app, policy, customers and the App Store events that move them (docs in the README's quick start).
enum Demo {
    static let bundleIdentifier = ServiceConfiguration.demoBundleIdentifier
    static let appAppleId: Int64 = 1_234_567_890
    static let issuerIdentifier = "00000000-0000-0000-0000-000000000000"
    static let monthly = "com.example.monthly"
    static let annual = "com.example.annual"
    static let group = "21000001"
    /// The demo's running experiment: the retention offer against none (its id puts `leaving-user` in `offer`, so
    /// the README's retention answer is the offer).
    static let experimentIdentifier = "retention-offer"

    /// The demo's policy: the product in miniature (docs/policy.md explains every line).
    static let policyText = """
        apps:
          - bundleIdentifier: \(bundleIdentifier)
            issuerIdentifier: \(issuerIdentifier)   # made up: the App Store would refuse these JWS
            appAppleId: \(appAppleId)
            products:
              - productIdentifier: \(monthly)
                subscriptionGroupIdentifier: "\(group)"
                introductoryOffer:
                  rules: [never-had-introductory-offer]
                offers:
                  - offerIdentifier: winback_50
                    description: 50% off for 3 months, for subscribers who left 1 to 365 days ago; once a month
                    rules: [app-store-subscriber, { lapsed: { minDays: 1, maxDays: 365 } }, { cap: { count: 1, days: 30 } }]
                  - offerIdentifier: retention_30
                    description: 30% off, for subscribers who turned auto-renew off
                    rules: [auto-renew-off]
                  - offerIdentifier: loyalty_month
                    description: a free month after 6 renewals
                    rules: [active-subscriber, { loyalty: { minRenewals: 6 } }]
                retention:
                  - promotionalOffer: retention_30
                    messageIdentifier: 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f
                  - alternateProduct: \(annual)
                    messageIdentifier: 1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d
                    rules: [active-subscriber]
                  - messageIdentifier: 0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
              - productIdentifier: \(annual)
                subscriptionGroupIdentifier: "\(group)"
        experiments:
          - id: \(experimentIdentifier)
            description: does the retention offer keep customers who turned auto-renew off, against no offer?
            productIdentifier: \(monthly)
            channel: retention
            metric: converted
            windowDays: 7
            plannedCustomers: 200
            variants:
              - { name: offer, messageIdentifier: 9f2b8d1e-3c4a-4b5d-8e6f-7a8b9c0d1e2f, weight: 1 }
              - { name: none, holdout: true, weight: 1 }
        """

    /// An App Store event the demo can sign for a customer (`POST /demo/notifications`).
    enum Event: String, CaseIterable, Sendable {
        case subscribe, renew
        case autoRenewOff = "auto-renew-off"
        case autoRenewOn = "auto-renew-on"
        case expire, refund
        /// The customer redeems the win-back offer (`winback_50`, 50 % off for 3 months): a resubscription carrying
        /// the offer, or `OFFER_REDEEMED` for an active subscriber (docs/outcomes.md).
        case redeemWinback = "redeem-winback"
    }

    /// The demo customers and their history, oldest event first (days relative to start-up).
    static let customers: [(name: String, events: [(Event, daysAgo: Double)])] = [
        ("lapsed-user", [(.subscribe, 100), (.renew, 70), (.expire, 40)]),
        ("leaving-user", [(.subscribe, 10), (.autoRenewOff, 1)]),
        ("loyal-user", [(.subscribe, 250)] + (1...8).map { (.renew, 250 - 30 * Double($0)) }),
    ]

    /// The demo customer's original transaction: the one the store knows, else a stable made-up one.
    static func originalTransactionId(for username: String, known facts: CustomerFacts?) -> String {
        facts?.subscriptions.first { $0.subscriptionGroupIdentifier == group }?.originalTransactionId ?? originalTransactionId(for: username)
    }

    /// A stable original transaction identifier for a demo customer.
    static func originalTransactionId(for username: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in username.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return "2000000\(String(hash % 1_000_000_000).leftPadded(to: 9))"
    }

    /// A signed notification of `event` for `username`, consistent with what the store knows of them, dated `at`.
    /// `offer`: the offer a redemption carries (the win-back offer unless told); `transactionAt`: when the
    /// transaction concerned was made (a refund's), else `at`.
    static func notification(
        _ event: Event,
        for username: String,
        known facts: CustomerFacts?,
        at date: Date,
        appStore: DemoAppStore,
        offer: String = "winback_50",
        transactionAt: Date? = nil
    ) async throws -> String {
        let subscription = facts?.subscriptions.first { $0.subscriptionGroupIdentifier == group }
        let original = originalTransactionId(for: username, known: facts)
        let now = date.appStoreMilliseconds
        let day: Int64 = 86_400_000
        let currentExpiry = subscription?.expiresDate?.appStoreMilliseconds ?? now + 30 * day
        var transaction = JWSTransactionDecodedPayload()
        transaction.originalTransactionId = original
        transaction.transactionId = "\(original)\(String((transactionAt?.appStoreMilliseconds ?? now) % 1_000_000).leftPadded(to: 6))"
        transaction.bundleIdentifier = bundleIdentifier
        transaction.productIdentifier = monthly
        transaction.subscriptionGroupIdentifier = group
        transaction.type = .autoRenewable
        transaction.appAccountToken = username
        transaction.environment = .sandbox
        transaction.storefront = "USA"
        transaction.signedDate = now
        transaction.originalPurchaseDate = subscription?.originalPurchaseDate?.appStoreMilliseconds ?? now
        transaction.purchaseDate = now
        var autoRenew = subscription?.autoRenewEnabled ?? true
        let type: NotificationType
        var subtype: NotificationSubtype?
        switch event {
        case .subscribe:
            (type, subtype, autoRenew) = (.subscribed, facts == nil ? .initialBuy : .resubscribe, true)
            transaction.expiresDate = now + 30 * day
            (transaction.price, transaction.currency) = (4_990, "USD")
        case .renew:
            (type, autoRenew) = (.didRenew, true)
            transaction.expiresDate = max(currentExpiry, now) + 30 * day
            (transaction.price, transaction.currency) = (4_990, "USD")
        case .autoRenewOff, .autoRenewOn:
            autoRenew = event == .autoRenewOn
            (type, subtype) = (.didChangeRenewalStatus, autoRenew ? .autoRenewEnabled : .autoRenewDisabled)
            transaction.expiresDate = currentExpiry
        case .expire:
            (type, subtype, autoRenew) = (.expired, .voluntary, false)
            transaction.expiresDate = now - 60_000
        case .refund:
            type = .refund
            transaction.expiresDate = currentExpiry
            transaction.revocationDate = now
        case .redeemWinback:
            let active = subscription?.state == .active
            (type, subtype, autoRenew) = active ? (.offerRedeemed, nil, true) : (.subscribed, .resubscribe, true)
            transaction.expiresDate = max(currentExpiry, now) + 30 * day
            transaction.offerType = .promotionalOffer
            transaction.offerIdentifier = offer
            transaction.offerDiscountType = .payAsYouGo
            transaction.offerPeriod = offer == "winback_50" ? "P3M" : "P1M"
            (transaction.price, transaction.currency) = (offer == "winback_50" ? 2_490 : 3_490, "USD")
        }
        var renewal = JWSRenewalInfoDecodedPayload()
        renewal.originalTransactionId = original
        renewal.productIdentifier = monthly
        renewal.autoRenewProductId = monthly
        renewal.autoRenewStatus = autoRenew ? .on : .off
        renewal.environment = .sandbox
        renewal.signedDate = now
        var data = NotificationData()
        data.bundleIdentifier = bundleIdentifier
        data.appAppleId = appAppleId
        data.environment = .sandbox
        data.signedTransactionInfo = try await appStore.sign(transaction)
        data.signedRenewalInfo = try await appStore.sign(renewal)
        var notification = ResponseBodyV2DecodedPayload()
        notification.notificationType = type
        notification.subtype = subtype
        notification.notificationUUID = UUID().uuidString.lowercased()
        notification.version = "2.0"
        notification.signedDate = now
        notification.data = data
        return try await appStore.sign(notification)
    }

    /// A signed Retention Messaging request for `username`'s subscription, as the App Store sends it.
    static func retentionRequest(for username: String, known facts: CustomerFacts?, appStore: DemoAppStore) async throws -> String {
        let original = originalTransactionId(for: username, known: facts)
        return try await appStore.sign(
            DecodedRealtimeRequestBody(
                originalTransactionId: original,
                appAppleId: appAppleId,
                productIdentifier: monthly,
                userLocale: "en-US",
                requestIdentifier: UUID().uuidString.lowercased(),
                environment: .sandbox,
                signedDate: Date().appStoreMilliseconds
            )
        )
    }

    /// Plays the demo customers' histories through the real notification endpoint's code (verified like the
    /// App Store's), so the demo starts with a lapsed, a leaving and a loyal customer.
    static func seed(_ notifications: NotificationIngestion, view: CustomerView, appStore: DemoAppStore, now: Date = Date()) async throws {
        for customer in customers {
            for (event, daysAgo) in customer.events {
                let key = CustomerKey(bundleIdentifier: bundleIdentifier, applicationUsername: customer.name)
                let facts = try await view.facts(of: key)
                let payload = try await notification(
                    event,
                    for: customer.name,
                    known: facts,
                    at: now.addingTimeInterval(-daysAgo * 86_400),
                    appStore: appStore
                )
                _ = try await notifications.receive(signedPayload: payload)
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
