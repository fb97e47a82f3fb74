import AppStoreNotifications
import AppStoreServerAPI
import OfferApplication
import OfferModel

/// Apple's per-app quota for the App Store Server API, kept by every replica on one PostgreSQL store
/// (docs/operations.md "Rate limits"): a bucket per app, environment and endpoint, at the rate each client allows
/// itself (`OFFER_SIGNER_APP_STORE_API_RATE_LIMIT`'s Production and Sandbox rates), leased as the other shared limits
/// are (``SharedTokenBuckets``). A replica whose store does not answer decides alone for a few seconds, at the full
/// rate.
final class SharedAppStoreQuota: AppStoreQuota {
    private let production: SharedTokenBuckets?
    private let sandbox: SharedTokenBuckets?

    /// `nil` rates (or not positive): that environment is not limited (the client's own limiter is off too).
    init(_ limit: AppStoreServerAPIConfiguration.RateLimit, store: FleetRateLimits) {
        func buckets(_ kind: String, _ rate: Double) -> SharedTokenBuckets? {
            guard rate.isFinite, rate > 0 else { return nil }
            return SharedTokenBuckets(kind: kind, rate: rate, burst: max(1, rate), store: store)
        }
        production = buckets("app-store-api-production", limit.productionPerSecond)
        sandbox = buckets("app-store-api-sandbox", limit.sandboxPerSecond)
    }

    func take(bundleIdentifier: String, environment: AppStoreEnvironment, endpoint: String) async -> Duration? {
        guard let buckets = environment == .production ? production : sandbox else { return nil }
        switch await buckets.take("\(bundleIdentifier) \(endpoint)") {
        case .allowed: return nil
        case .limited(let seconds): return .seconds(max(1, seconds))
        }
    }
}
