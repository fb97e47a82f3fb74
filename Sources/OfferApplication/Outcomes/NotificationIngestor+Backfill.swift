import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferErrors

extension NotificationIngestor {
    /// Reads the App Store's notification history of the last `days` days (Get Notification History, every
    /// environment the client asks) and ingests each notification as a live delivery: verified, applied once per
    /// `notificationUUID`, its redemptions and what followed them recorded (`offer-signer outcomes backfill`).
    /// - Parameters:
    ///   - days: 1 to ``AppStoreServerAPIClient/notificationHistoryDays`` (180).
    ///   - client: the app's App Store Server API client.
    /// - Returns: what the notifications did, added up over the environments.
    /// - Throws: ``OfferServiceError`` 400 `invalid_request` for `days` out of range, 503 `app_store_unavailable`
    ///   when the App Store cannot be read (what was read before is kept).
    public func backfill(days: Int, client: AppStoreServerAPIClient, now: Date = Date()) async throws(OfferServiceError) -> ReplaySummary {
        guard (1...AppStoreServerAPIClient.notificationHistoryDays).contains(days) else {
            throw OfferServiceError.invalidRequest(field: "days", "days is 1 to \(AppStoreServerAPIClient.notificationHistoryDays): the App Store keeps that much notification history.")
        }
        var total = ReplaySummary()
        for environment in client.environments {
            let history: NotificationHistory
            do {
                history = try await client.notificationHistory(from: now.addingTimeInterval(-Double(days) * 86_400), to: now, environment: environment)
            } catch {
                logger.error("the App Store's notification history could not be read", metadata: [
                    "app_store_environment": "\(environment.rawValue)", "code": "\(error.code.rawValue)",
                ])
                throw OfferServiceError(.appStoreUnavailable, "The App Store's notification history (\(environment.rawValue)) could not be read: \(error.message)")
            }
            let summary = await replay(history.signedPayloads.joined(separator: "\n"))
            total.processed += summary.processed
            total.duplicate += summary.duplicate
            total.ignored += summary.ignored
            total.stale += summary.stale
            total.refused += summary.refused
            total.failed += summary.failed
            total.problems += summary.problems.map { "\(environment.rawValue) \($0)" }
            if !history.isComplete { total.problems.append("\(environment.rawValue): the history is longer than the page limit; the rest was not read") }
        }
        return total
    }
}
