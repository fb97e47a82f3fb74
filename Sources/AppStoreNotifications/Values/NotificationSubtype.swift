/// The subtype that details a ``NotificationType``.
///
/// [subtype](https://developer.apple.com/documentation/appstoreservernotifications/subtype)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct NotificationSubtype: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"INITIAL_BUY"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `INITIAL_BUY`: A first purchase in the subscription group (SUBSCRIBED).
    public static let initialBuy = Self(rawValue: "INITIAL_BUY")

    /// `RESUBSCRIBE`: A resubscription after the subscription lapsed (SUBSCRIBED).
    public static let resubscribe = Self(rawValue: "RESUBSCRIBE")

    /// `DOWNGRADE`: A downgrade, effective at the next renewal.
    public static let downgrade = Self(rawValue: "DOWNGRADE")

    /// `UPGRADE`: An upgrade, effective immediately.
    public static let upgrade = Self(rawValue: "UPGRADE")

    /// `AUTO_RENEW_ENABLED`: The customer turned auto-renew on.
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")

    /// `AUTO_RENEW_DISABLED`: The customer (or Apple after a refund) turned auto-renew off.
    public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")

    /// `VOLUNTARY`: The subscription expired after the customer turned off auto-renew (EXPIRED).
    public static let voluntary = Self(rawValue: "VOLUNTARY")

    /// `BILLING_RETRY`: The subscription expired after billing retry ended (EXPIRED).
    public static let billingRetry = Self(rawValue: "BILLING_RETRY")

    /// `PRICE_INCREASE`: The subscription expired because the customer did not consent to a price increase (EXPIRED).
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")

    /// `PRODUCT_NOT_FOR_SALE`: The subscription expired because the product was not for sale at renewal (EXPIRED).
    public static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")

    /// `GRACE_PERIOD`: A renewal failed and the subscription is in the billing grace period (DID_FAIL_TO_RENEW).
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")

    /// `BILLING_RECOVERY`: A subscription that failed to renew renewed after all (DID_RENEW).
    public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")

    /// `PENDING`: The customer has not responded to a price increase yet (PRICE_INCREASE).
    public static let pending = Self(rawValue: "PENDING")

    /// `ACCEPTED`: The customer accepted a price increase (PRICE_INCREASE).
    public static let accepted = Self(rawValue: "ACCEPTED")

    /// `SUMMARY`: A mass renewal-date extension finished (RENEWAL_EXTENSION).
    public static let summary = Self(rawValue: "SUMMARY")

    /// `FAILURE`: A renewal-date extension failed for one subscription (RENEWAL_EXTENSION).
    public static let failure = Self(rawValue: "FAILURE")

    /// `UNREPORTED`: An external purchase token was not reported (EXTERNAL_PURCHASE_TOKEN).
    public static let unreported = Self(rawValue: "UNREPORTED")

    /// `ACTIVE_TOKEN_REMINDER`: A reminder to report an active external purchase token.
    public static let activeTokenReminder = Self(rawValue: "ACTIVE_TOKEN_REMINDER")

    /// `CREATED`: A one-time charge or external purchase token was created.
    public static let created = Self(rawValue: "CREATED")

    /// `CHANGED`: An Advanced Commerce subscription changed.
    public static let changed = Self(rawValue: "CHANGED")

    /// `REMOVED`: An Advanced Commerce subscription item was removed.
    public static let removed = Self(rawValue: "REMOVED")
}
