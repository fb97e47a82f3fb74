public import AppStoreNotifications
public import Foundation
import Logging
import NIOCore

extension AppStoreServerAPIClient {
    /// How far back Get Notification History reaches: Apple keeps 180 days.
    public static let notificationHistoryDays = 180

    /// Get Notification History: `POST /inApps/v1/notifications/history`, every page of the span in order, each
    /// notification handed to `receive` as Apple sent it (its `signedPayload`, not yet verified: the caller checks it
    /// as it checks a notification that arrives).
    ///
    /// Each page has its own time budget (`pageTimeout`), with the retries, the rate limit and `Retry-After` every call
    /// has. A page that says it has more without a new token, or more pages than `maximumPages`, stops the reading
    /// with an error after what was read was handed over.
    ///
    /// - Parameters:
    ///   - start: The start of the span; at most ``notificationHistoryDays`` days ago.
    ///   - end: The end of the span, after `start` (Apple reads a future end as now).
    ///   - environment: The environment asked (one of the configured ones).
    ///   - pageTimeout: The budget of one page; default 30 s.
    ///   - maximumPages: The most pages read; default 10,000.
    ///   - receive: Called with each `signedPayload`, in Apple's order (an empty string for an item without one, or
    ///     with one larger than this client takes).
    /// - Returns: How many notifications were handed over.
    /// - Throws: ``AppStoreServerAPIError``: ``AppStoreServerAPIError/Code/invalidRequest`` for a span Apple would
    ///   refuse, what any call throws otherwise, or what `receive` throws, wrapped.
    public func notificationHistory(
        from start: Date,
        to end: Date,
        environment: AppStoreEnvironment,
        now: Date = Date(),
        pageTimeout: Duration = .seconds(30),
        maximumPages: Int = 10_000,
        receive: (String) async throws -> Void
    ) async throws(AppStoreServerAPIError) -> Int {
        let oldest = now.addingTimeInterval(-Double(Self.notificationHistoryDays) * 86_400)
        guard start >= oldest.addingTimeInterval(-1), start < end else {
            throw AppStoreServerAPIError(
                .invalidRequest,
                "the span of notification history must start within the last \(Self.notificationHistoryDays) days and before its end"
            )
        }
        guard configuration.environments.contains(environment) else {
            throw AppStoreServerAPIError(.invalidConfiguration, "the \(environment.rawValue) environment is not one this server asks")
        }
        let body: ByteBuffer
        do {
            body = ByteBuffer(
                bytes: try JSONEncoder().encode(
                    NotificationHistoryRequest(
                        startDate: Int64((start.timeIntervalSince1970 * 1000).rounded(.down)),
                        endDate: Int64((end.timeIntervalSince1970 * 1000).rounded(.down))
                    )
                )
            )
        } catch {
            throw AppStoreServerAPIError(.invalidRequest, "the notification history request could not be written")
        }
        var token: String?
        var seen: Set<String> = []
        var received = 0
        for _ in 0..<max(1, maximumPages) {
            let answer = try await requester.request(
                .notificationHistory,
                path: "/inApps/v1/notifications/history",
                query: token.map { [("paginationToken", $0)] } ?? [],
                json: body,
                environment: environment,
                deadline: ContinuousClock.now + pageTimeout,
                fingerprint: "history"
            )
            let page = try decode(NotificationHistoryResponse.self, from: answer)
            let items = page.notificationHistory ?? []
            guard items.count <= Self.maximumSignedItems else {
                throw AppStoreServerAPIError(
                    .invalidResponse,
                    "a page of the App Store's notification history has more notifications than this server accepts"
                )
            }
            for item in items {
                // An item without a usable payload is handed over empty: the receiver refuses and counts it, and the
                // reading goes on (stopping here would stop every later backfill at the same item).
                let signedPayload = item.signedPayload.flatMap { $0.utf8.count <= Self.maximumSignedPayloadBytes ? $0 : nil } ?? ""
                do {
                    try await receive(signedPayload)
                } catch {
                    throw AppStoreServerAPIError(
                        .invalidResponse,
                        "a notification from the App Store's history could not be recorded; the reading stopped there"
                    )
                }
                received += 1
            }
            guard page.hasMore == true else { return received }
            guard let next = page.paginationToken, !next.isEmpty, next.utf8.count <= 4096, seen.insert(next).inserted else {
                throw AppStoreServerAPIError(.invalidResponse, "the App Store's notification history says it has more but gives no new page token")
            }
            token = next
        }
        logger.warning("notification history longer than the page limit; the rest is not read", metadata: ["pages": "\(maximumPages)"])
        throw AppStoreServerAPIError(.invalidResponse, "the notification history has more than \(maximumPages) pages; read a shorter span")
    }

    /// The largest `signedPayload` accepted from the history (a notification with its transaction and renewal info
    /// is a few kilobytes).
    static let maximumSignedPayloadBytes = 256 * 1024
}
