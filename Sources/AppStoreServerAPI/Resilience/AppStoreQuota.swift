import AppStoreNotifications

/// Apple's quota of App Store Server API requests, per app, shared by every replica of a service (docs/operations.md
/// "Rate limits"). A client given one asks it once per request, after its own limiter: the client's own buckets keep
/// one process within the rate, this keeps the fleet within it.
public protocol AppStoreQuota: Sendable {
    /// Takes one request of the app's quota for `environment` and `endpoint` (a metric name, such as
    /// `subscription_statuses`).
    /// - Returns: `nil` when the request may go now (its token is spent); otherwise how long until the fleet has
    ///   one again. Never throws: a quota that cannot be asked decides alone.
    func take(bundleIdentifier: String, environment: AppStoreEnvironment, endpoint: String) async -> Duration?
}
