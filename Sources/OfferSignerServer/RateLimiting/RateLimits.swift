import Foundation
import HTTPTypes
import OfferApplication
import OfferModel

/// A rate: `count` requests per `seconds`, written `2000/s`, `20/min`, `1000/h`; `none` is unlimited.
public struct Rate: Sendable, Hashable, CustomStringConvertible {
    /// Requests allowed per period (also the burst).
    public var count: Int
    /// The period in seconds.
    public var seconds: Double

    public init(count: Int, seconds: Double) {
        self.count = count
        self.seconds = seconds
    }

    /// Parses `N/s`, `N/min`, `N/h` (N from 1 to 1,000,000); `nil` for `none`.
    /// - Throws: ``ConfigurationError`` naming `variable`.
    public static func parse(_ text: String, variable: String) throws(ConfigurationError) -> Rate? {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        if trimmed == "none" || trimmed == "off" { return nil }
        let parts = trimmed.split(separator: "/")
        let periods: [String: Double] = ["s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3_600, "hour": 3_600]
        guard parts.count == 2, let count = Int(parts[0]), (1...1_000_000).contains(count), let seconds = periods[String(parts[1])] else {
            throw ConfigurationError(
                .invalidConfiguration,
                "\(variable)=\(text.prefix(30)) is not a rate; write N/s, N/min or N/h (for example 2000/s or 20/min), or none."
            )
        }
        return Rate(count: count, seconds: seconds)
    }

    public var description: String {
        "\(count)/\(seconds == 1 ? "s" : seconds == 60 ? "min" : "h")"
    }

    /// Token buckets for this rate.
    func buckets() -> TokenBuckets {
        TokenBuckets(rate: Double(count) / seconds, burst: Double(count))
    }

    /// The fleet's buckets of `kind` for this rate on `shared`, or this replica's own without one.
    func buckets(kind: String, shared: FleetRateLimits?) -> any LimitBuckets {
        guard let shared else { return buckets() }
        return SharedTokenBuckets(kind: kind, rate: Double(count) / seconds, burst: Double(count), store: shared)
    }
}

/// The rate limits of one replica (README "Securing it"): per client credential and per customer on
/// `/v1/offers/*`, per client address on the App Store endpoints. Over a limit: 429 `rate_limited` with
/// `Retry-After`, and nothing is signed or recorded.
public struct RateLimitConfiguration: Sendable, Hashable {
    /// `OFFER_SIGNER_RATE_LIMIT_CLIENT`: per credential (an API key, a login JWT's customer, or in open mode
    /// the client address). Default 600/min for login JWTs; API keys (your own servers) and the open mode
    /// are limited only when the variable is set.
    public var client: Rate?
    /// `OFFER_SIGNER_RATE_LIMIT_CUSTOMER`: per customer. Default 20/min for requests with a login JWT (an app
    /// calling directly); with an API key or in the open mode only when the variable is set.
    public var customer: Rate?
    /// Whether the variables were set (then they apply to API keys too).
    public var clientExplicit: Bool
    public var customerExplicit: Bool
    /// `OFFER_SIGNER_RATE_LIMIT_APP_STORE`: per client address on the notification and retention endpoints.
    public var appStore: Rate?

    public init(
        client: Rate? = Rate(count: 600, seconds: 60),
        customer: Rate? = Rate(count: 20, seconds: 60),
        clientExplicit: Bool = false,
        customerExplicit: Bool = false,
        appStore: Rate? = Rate(count: 100, seconds: 1)
    ) {
        self.client = client
        self.customer = customer
        self.clientExplicit = clientExplicit
        self.customerExplicit = customerExplicit
        self.appStore = appStore
    }

    /// No limits at all (tests, the demo's benchmarks).
    public static let none = RateLimitConfiguration(client: nil, customer: nil, clientExplicit: true, customerExplicit: true, appStore: nil)
}

/// The token buckets of the configured limits; one limited key never slows another. On a PostgreSQL store the
/// client and customer limits are the fleet's (``SharedTokenBuckets``: every replica takes from one bucket); the
/// App Store endpoints' limits, per address, stay each replica's own.
public final class RateLimits: Sendable {
    public let configuration: RateLimitConfiguration
    private let clients: (any LimitBuckets)?
    private let customers: (any LimitBuckets)?
    private let appStore: TokenBuckets?
    /// Retention requests, per address: ten times the App Store rate (Apple's performance test sends bursts, and a
    /// 429 fails it; each request is still an App Store signature to verify).
    private let retentionRate: Rate?
    private let retention: TokenBuckets?

    /// - Parameter shared: the store's shared limits (``OfferSignerUseCases/sharedLimits``, ``ApplicationStore/sharedLimits``); `nil`: this replica's
    ///   own.
    public init(_ configuration: RateLimitConfiguration, shared: FleetRateLimits? = nil) {
        self.configuration = configuration
        clients = configuration.client?.buckets(kind: "client", shared: shared)
        customers = configuration.customer?.buckets(kind: "customer", shared: shared)
        appStore = configuration.appStore?.buckets()
        retentionRate = configuration.appStore.map { Rate(count: $0.count * 10, seconds: $0.seconds) }  // count ≤ 10^6: no overflow
        retention = retentionRate?.buckets()
    }

    /// Admits a request of a client credential, at once (the event-loop path: a replica that must ask the store
    /// for a lease first refuses for a second).
    /// - Throws: ``APIError`` 429 `rate_limited`.
    func admit(credential: String, identity: ClientIdentity) throws(APIError) {
        if case .customer = identity {} else if !configuration.clientExplicit { return }
        try refuse(clients?.take(credential, now: .now), what: "this client credential", rate: configuration.client)
    }

    /// Admits a request of a client credential, waiting for a lease of the fleet's bucket when it needs one.
    func admit(credential: String, identity: ClientIdentity) async throws(APIError) {
        if case .customer = identity {} else if !configuration.clientExplicit { return }
        try refuse(await clients?.take(credential), what: "this client credential", rate: configuration.client)
    }

    /// Admits a request for a customer, at once.
    func admit(customer: String, identity: ClientIdentity) throws(APIError) {
        if case .customer = identity {} else if !configuration.customerExplicit { return }
        try refuse(customers?.take(customer, now: .now), what: "this customer", rate: configuration.customer)
    }

    /// Admits a request for a customer, waiting for a lease of the fleet's bucket when it needs one.
    func admit(customer: String, identity: ClientIdentity) async throws(APIError) {
        if case .customer = identity {} else if !configuration.customerExplicit { return }
        try refuse(await customers?.take(customer), what: "this customer", rate: configuration.customer)
    }

    /// Admits a request to the App Store's notification endpoint from `address`.
    func admit(appStoreAddress address: String) throws(APIError) {
        try refuse(appStore?.take(address), what: "this address", rate: configuration.appStore)
    }

    /// Admits a retention request from `address`: its own buckets, at ten times the App Store rate (a burst of
    /// notifications never starves retention requests, whose answer Apple needs within 700 ms).
    func admit(retentionAddress address: String) throws(APIError) {
        try refuse(retention?.take(address), what: "this address", rate: retentionRate)
    }

    private func refuse(_ decision: TokenBuckets.Decision?, what: String, rate: Rate?) throws(APIError) {
        guard let rate, case .limited(let seconds) = decision else { return }
        throw APIError(
            .rateLimited,
            "Too many requests for \(what) (limit \(rate)); nothing was signed. Try again in \(seconds) second\(seconds == 1 ? "" : "s").",
            headers: [.retryAfter: "\(seconds)"]
        )
    }
}
