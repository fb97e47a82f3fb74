/// The App Store Server API endpoints this client calls, named as in metrics.
enum Endpoint: String, Hashable, Sendable {
    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    case subscriptionStatuses = "subscription_statuses"
    /// Get Transaction History (v2): `GET /inApps/v2/history/{transactionId}`.
    case transactionHistory = "transaction_history"
    /// Get Notification History: `POST /inApps/v1/notifications/history`.
    case notificationHistory = "notification_history"
}
