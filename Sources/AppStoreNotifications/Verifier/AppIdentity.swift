/// The app and environment a notification is about, wherever the notification carries them.
struct AppIdentity {
    let bundleId: String?
    let appAppleId: Int64?
    let environment: AppStoreEnvironment?

    /// From `data`, else `summary`, else `externalPurchaseToken` (in that order, as Apple's library).
    init(of notification: ResponseBodyV2DecodedPayload) {
        if let data = notification.data {
            (bundleId, appAppleId, environment) = (data.bundleId, data.appAppleId, data.environment)
        } else if let summary = notification.summary {
            (bundleId, appAppleId, environment) = (summary.bundleId, summary.appAppleId, summary.environment)
        } else if let token = notification.externalPurchaseToken {
            (bundleId, appAppleId, environment) = (token.bundleId, token.appAppleId, token.environment)
        } else {
            (bundleId, appAppleId, environment) = (nil, nil, nil)
        }
    }
}
