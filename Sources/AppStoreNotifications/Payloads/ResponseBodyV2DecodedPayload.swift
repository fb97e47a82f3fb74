/// The decoded `signedPayload` of an App Store Server Notification V2.
///
/// [ResponseBodyV2DecodedPayload](https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload)
///
/// Field names are Apple's. Every field is optional and unknown fields are ignored, so a payload from a newer App Store
/// still decodes. Dates are UNIX time in **milliseconds** (`Int64`), exactly as signed; see ``Foundation/Date/init(appStoreMilliseconds:)``.
/// Exactly one of ``data``, ``summary`` and ``externalPurchaseToken`` is normally present.
public struct ResponseBodyV2DecodedPayload: Codable, Hashable, Sendable {
    /// What happened, e.g. ``NotificationType/didRenew``.
    public var notificationType: NotificationType?

    /// Details of ``notificationType``, e.g. ``NotificationSubtype/autoRenewDisabled``; absent for many types.
    public var subtype: NotificationSubtype?

    /// A unique identifier of the notification: the App Store retries, so use it to ignore duplicates.
    public var notificationUUID: String?

    /// The app, environment and signed transaction / renewal info the notification is about.
    public var data: NotificationData?

    /// The summary of a mass renewal-date extension (``NotificationType/renewalExtension`` with ``NotificationSubtype/summary``).
    public var summary: NotificationSummary?

    /// The external purchase token of an ``NotificationType/externalPurchaseToken`` notification.
    public var externalPurchaseToken: ExternalPurchaseToken?

    /// The notification version, `"2.0"`.
    public var version: String?

    /// When the App Store signed the notification, UNIX time in milliseconds; certificates are checked at this time.
    public var signedDate: Int64?

    /// Creates an empty payload; set the fields you need (test support builds notifications this way).
    public init() {}
}
