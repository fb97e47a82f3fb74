/// The type of an App Store Server Notification V2.
///
/// [notificationType](https://developer.apple.com/documentation/appstoreservernotifications/notificationtype)
///
/// A raw-value struct rather than an enum: a value the App Store adds later decodes as-is (compare it with the
/// constants below; never assume the list is complete).
public struct NotificationType: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The value exactly as the App Store sends it, e.g. `"CONSUMPTION_REQUEST"`.
    public let rawValue: String

    /// Wraps a value as the App Store sends it; unknown values are kept.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The raw value, for logs and error messages.
    public var description: String { rawValue }

    /// `CONSUMPTION_REQUEST`: The customer asked for a refund of a consumable; the App Store asks for consumption data.
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")

    /// `DID_CHANGE_RENEWAL_PREF`: The customer changed the product that renews next (upgrade or downgrade).
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")

    /// `DID_CHANGE_RENEWAL_STATUS`: The customer turned auto-renew on or off.
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")

    /// `DID_FAIL_TO_RENEW`: A renewal failed because of a billing issue.
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")

    /// `DID_RENEW`: The subscription renewed.
    public static let didRenew = Self(rawValue: "DID_RENEW")

    /// `EXPIRED`: The subscription expired.
    public static let expired = Self(rawValue: "EXPIRED")

    /// `EXTERNAL_PURCHASE_TOKEN`: An external purchase token was created but not reported.
    public static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")

    /// `GRACE_PERIOD_EXPIRED`: The billing grace period ended without a renewal.
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")

    /// `METADATA_UPDATE`: An Advanced Commerce API subscription's metadata changed.
    public static let metadataUpdate = Self(rawValue: "METADATA_UPDATE")

    /// `MIGRATION`: A subscription migrated to the Advanced Commerce API.
    public static let migration = Self(rawValue: "MIGRATION")

    /// `OFFER_REDEEMED`: The customer redeemed a promotional offer, offer code or win-back offer.
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")

    /// `ONE_TIME_CHARGE`: A one-time (consumable, non-consumable, non-renewing) purchase.
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")

    /// `PRICE_CHANGE`: An Advanced Commerce API subscription's price changed.
    public static let priceChange = Self(rawValue: "PRICE_CHANGE")

    /// `PRICE_INCREASE`: The system told the customer of a price increase.
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")

    /// `REFUND`: The App Store refunded a transaction.
    public static let refund = Self(rawValue: "REFUND")

    /// `REFUND_DECLINED`: The App Store declined a refund request.
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")

    /// `REFUND_REVERSED`: The App Store reversed a refund.
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")

    /// `RENEWAL_EXTENDED`: The App Store extended the renewal date of a subscription.
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")

    /// `RENEWAL_EXTENSION`: Progress of a mass renewal-date extension (summary notification).
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")

    /// `RESCIND_CONSENT`: A customer rescinded consent for external purchases.
    public static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")

    /// `REVOKE`: Family Sharing no longer grants this customer the purchase.
    public static let revoke = Self(rawValue: "REVOKE")

    /// `SUBSCRIBED`: The customer subscribed (initial buy or resubscribe).
    public static let subscribed = Self(rawValue: "SUBSCRIBED")

    /// `TEST`: A test notification requested through the App Store Server API.
    public static let test = Self(rawValue: "TEST")
}
