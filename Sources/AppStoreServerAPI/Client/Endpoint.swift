/// The App Store Server API endpoints this client calls, named as in metrics.
enum Endpoint: String, Hashable, Sendable {
    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}`.
    case subscriptionStatuses = "subscription_statuses"
    /// Get Transaction History (v2): `GET /inApps/v2/history/{transactionId}`.
    case transactionHistory = "transaction_history"
    /// Get Notification History: `POST /inApps/v1/notifications/history`.
    case notificationHistory = "notification_history"
    /// Retention Messaging API (`/inApps/v1/messaging/…`), one case per endpoint: Apple limits each on its own.
    case messagingUploadImage = "messaging_upload_image"
    case messagingDeleteImage = "messaging_delete_image"
    case messagingImageList = "messaging_image_list"
    case messagingUploadMessage = "messaging_upload_message"
    case messagingDeleteMessage = "messaging_delete_message"
    case messagingMessageList = "messaging_message_list"
    case messagingConfigureDefault = "messaging_configure_default"
    case messagingGetDefault = "messaging_get_default"
    case messagingDeleteDefault = "messaging_delete_default"
    case messagingConfigureRealtimeURL = "messaging_configure_realtime_url"
    case messagingGetRealtimeURL = "messaging_get_realtime_url"
    case messagingDeleteRealtimeURL = "messaging_delete_realtime_url"
    case messagingStartPerformanceTest = "messaging_start_performance_test"
    case messagingPerformanceTestResult = "messaging_performance_test_result"
}
