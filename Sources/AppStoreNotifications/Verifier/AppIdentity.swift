/// The app and environment a notification is about, wherever the notification carries them.
struct AppIdentity {
    let bundleIdentifier: String?
    let appAppleId: Int64?
    let environment: AppStoreEnvironment?

    /// From `data`, else `summary`, else `externalPurchaseToken` (in that order, as Apple's library).
    init(of notification: ResponseBodyV2DecodedPayload) {
        if let data = notification.data {
            (bundleIdentifier, appAppleId, environment) = (data.bundleIdentifier, data.appAppleId, data.environment)
        } else if let summary = notification.summary {
            (bundleIdentifier, appAppleId, environment) = (summary.bundleIdentifier, summary.appAppleId, summary.environment)
        } else if let token = notification.externalPurchaseToken {
            (bundleIdentifier, appAppleId, environment) = (token.bundleIdentifier, token.appAppleId, token.environment)
        } else {
            (bundleIdentifier, appAppleId, environment) = (nil, nil, nil)
        }
    }
}
