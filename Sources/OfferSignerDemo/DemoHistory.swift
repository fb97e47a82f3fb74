import AppStoreNotifications
import Foundation
import OfferApplication
import OfferModel

/// The demo's past weeks, played through the real code at start-up so that the console (docs/console.md) and the
/// outcome and experiment reports have something to show: customers who turned auto-renew off and were asked to
/// stay (the retention experiment `retention-offer`: the offer, or nothing), some of whom redeemed the offer,
/// renewed or asked for a refund; lapsed customers who were signed the win-back offer and came back; and offers
/// refused with their reasons. Signatures, decisions and retention answers are dated in the past through the
/// service's own pipeline; the App Store's side arrives as notifications signed by the demo's App Store.
enum DemoHistory {
    /// Customers asked to stay: `subscriber-01` … `subscriber-12`.
    static let subscribers = (1...12).map { "subscriber-\($0 < 10 ? "0" : "")\($0)" }
    /// Lapsed customers signed the win-back offer: `returning-01` … `returning-04`.
    static let returning = (1...4).map { "returning-0\($0)" }

    /// Plays the history up to `now` through the use cases (`notifications` for the App Store's notifications),
    /// reading the customers' facts through `customers`.
    static func seed(
        _ useCases: OfferSignerUseCases,
        notifications: NotificationIngestion,
        customers: CustomerView,
        appStore: DemoAppStore,
        now: Date = Date()
    ) async throws {
        let day: TimeInterval = 86_400
        func at(_ daysAgo: Double) -> Date { now.addingTimeInterval(-daysAgo * day) }
        func notify(_ event: Demo.Event, _ username: String, _ daysAgo: Double, offer: String = "winback_50", transactionAt: Date? = nil) async throws
        {
            let facts = try await customers.facts(of: CustomerKey(bundleIdentifier: Demo.bundleIdentifier, applicationUsername: username))
            let payload = try await Demo.notification(
                event,
                for: username,
                known: facts,
                at: at(daysAgo),
                appStore: appStore,
                offer: offer,
                transactionAt: transactionAt
            )
            _ = try await notifications.receive(signedPayload: payload)
        }
        func sign(_ offer: String, _ username: String, _ daysAgo: Double) async {
            // A refusal is part of the story (the decision log keeps it with its reasons).
            _ = try? await useCases.signing.signLegacy(
                SignOfferRequest(productIdentifier: Demo.monthly, offerIdentifier: offer, applicationUsername: username),
                at: at(daysAgo)
            )
        }

        // Retention: subscribed, renewed, turned auto-renew off, then the App Store asked what to show them.
        for (index, username) in subscribers.enumerated() {
            let asked = Double(2 + (index * 7) % 19) + 0.25
            try await notify(.subscribe, username, asked + 45)
            try await notify(.renew, username, asked + 15)
            try await notify(.autoRenewOff, username, asked + 0.5)
            let key = CustomerKey(bundleIdentifier: Demo.bundleIdentifier, applicationUsername: username)
            let facts = try await customers.facts(of: key)
            let request = DecodedRealtimeRequestBody(
                originalTransactionId: Demo.originalTransactionId(for: username, known: facts),
                appAppleId: Demo.appAppleId,
                productIdentifier: Demo.monthly,
                userLocale: "en-US",
                requestIdentifier: UUID().uuidString.lowercased(),
                environment: .sandbox,
                signedDate: at(asked).appStoreMilliseconds
            )
            let answer = try await useCases.retentionAnswers.answerRetention(request, bundleIdentifier: Demo.bundleIdentifier, now: at(asked))
            if answer.promotionalOffer != nil {
                // Offered the retention offer: most redeem it; of those, most renew, one asks for a refund.
                guard index != 9 else { continue }
                let redeemed = asked - 0.1
                try await notify(.redeemWinback, username, redeemed, offer: "retention_30")
                if index == 1 {
                    try await notify(.refund, username, redeemed - 0.4, transactionAt: at(redeemed))
                } else {
                    try await notify(.renew, username, asked - 1)
                }
            } else if index % 2 == 0 {
                // Not offered anything, and stayed all the same.
                try await notify(.autoRenewOn, username, asked - 0.3)
            }
        }

        // Win-back: lapsed months ago, signed the offer (legacy, dated), most came back; one was refused later.
        for (index, username) in returning.enumerated() {
            let signed = Double(3 + 5 * index) + 0.5
            try await notify(.subscribe, username, 150)
            try await notify(.renew, username, 120)
            try await notify(.expire, username, 90)
            await sign("retention_30", username, signed + 0.2)  // refused: not an active subscriber
            await sign("winback_50", username, signed)
            guard index < 3 else { continue }
            try await notify(.redeemWinback, username, signed - 0.2)
            await sign("winback_50", username, signed - 0.5)  // refused: no longer lapsed
            if index == 1 { try await notify(.renew, username, signed - 3) }
        }
        await customers.flushDecisionLog()
    }
}
