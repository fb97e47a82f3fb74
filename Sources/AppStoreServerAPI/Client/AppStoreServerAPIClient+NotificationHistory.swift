public import AppStoreNotifications
public import Foundation
import Logging

/// What Get Notification History returned: the notifications' `signedPayload`s as the App Store sent them, oldest
/// first, not verified here (the notification ingestion verifies each, as a live delivery).
public struct NotificationHistory: Sendable, Hashable {
    /// The environment asked.
    public var environment: AppStoreEnvironment
    /// The `signedPayload` of each notification.
    public var signedPayloads: [String]
    /// Whether every page was read (`false`: the page limit ended the reading).
    public var isComplete: Bool

    public init(environment: AppStoreEnvironment, signedPayloads: [String], isComplete: Bool) {
        self.environment = environment
        self.signedPayloads = signedPayloads
        self.isComplete = isComplete
    }
}

/// Get Notification History's answer, as Apple documents it (`NotificationHistoryResponse`).
struct NotificationHistoryResponse: Decodable {
    struct Item: Decodable {
        var signedPayload: String?
    }

    var paginationToken: String?
    var hasMore: Bool?
    var notificationHistory: [Item]?
}

extension AppStoreServerAPIClient {
    /// How far back the App Store keeps notification history: 180 days.
    public static let notificationHistoryDays = 180

    /// The longest `signedPayload` taken from the history (a notification is a few kilobytes).
    static let maximumSignedPayloadBytes = 64 * 1024

    /// Get Notification History: `POST /inApps/v1/notifications/history`, every page (`paginationToken`) up to
    /// `maximumPages`, each page with the client's time budget, retries and rate limit.
    ///
    /// - Parameters:
    ///   - start: The first notification's earliest sending time; at most ``notificationHistoryDays`` ago.
    ///   - end: Notifications sent before this time.
    ///   - environment: One of the configured environments.
    /// - Returns: The signed payloads, oldest first as Apple pages them.
    /// - Throws: ``AppStoreServerAPIError`` `.invalidRequest` (a window Apple does not keep, an environment not
    ///   configured), `.invalidResponse`, `.unauthorized`, `.rateLimited`, `.appStoreUnavailable`.
    public func notificationHistory(
        from start: Date, to end: Date, environment: AppStoreEnvironment, maximumPages: Int = 1_000
    ) async throws(AppStoreServerAPIError) -> NotificationHistory {
        guard configuration.environments.contains(environment) else {
            throw AppStoreServerAPIError(.invalidRequest, "the \(environment.rawValue) environment is not configured for the App Store Server API")
        }
        let oldest = Date().addingTimeInterval(-Double(Self.notificationHistoryDays) * 86_400 - 3_600)
        guard start < end, start >= oldest else {
            throw AppStoreServerAPIError(.invalidRequest, "the window must start before it ends and at most \(Self.notificationHistoryDays) days ago")
        }
        let body = Data(#"{"startDate":\#(Int64(start.timeIntervalSince1970 * 1000)),"endDate":\#(Int64(end.timeIntervalSince1970 * 1000))}"#.utf8)
        var payloads: [String] = []
        var tokens: Set<String> = []
        var token: String?
        for _ in 0..<max(1, maximumPages) {
            let query = token.map { [("paginationToken", $0)] } ?? []
            let answer = try await requester.get(
                .notificationHistory, path: "/inApps/v1/notifications/history", query: query, body: body, environment: environment,
                deadline: ContinuousClock.now + configuration.timeout, fingerprint: "-")
            let page = try decode(NotificationHistoryResponse.self, from: answer)
            let items = page.notificationHistory ?? []
            guard items.count <= Self.maximumSignedItems else {
                throw AppStoreServerAPIError(.invalidResponse, "a page of the App Store's notification history has more notifications than this server accepts")
            }
            for item in items {
                guard let payload = item.signedPayload, (1...Self.maximumSignedPayloadBytes).contains(payload.utf8.count) else {
                    throw AppStoreServerAPIError(.invalidResponse, "a notification in the App Store's history has no signed payload, or one too large")
                }
                payloads.append(payload)
            }
            guard page.hasMore == true else {
                return NotificationHistory(environment: environment, signedPayloads: payloads, isComplete: true)
            }
            guard let next = page.paginationToken, !next.isEmpty, next.utf8.count <= 4096, tokens.insert(next).inserted else {
                throw AppStoreServerAPIError(.invalidResponse, "the App Store's notification history says it has more but gives no new pagination token")
            }
            token = next
        }
        logger.warning("notification history longer than the page limit; the rest is not read", metadata: ["pages": "\(maximumPages)"])
        return NotificationHistory(environment: environment, signedPayloads: payloads, isComplete: false)
    }
}

extension AppStoreServerAPIClient {
    /// The environments this client asks, in order.
    public var environments: [AppStoreEnvironment] { configuration.environments }
}
