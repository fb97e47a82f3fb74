/// A verified notification together with its verified nested transaction and renewal info.
///
/// Returned by ``SignedDataVerifier/verifyAndDecodeNotificationContents(_:)``.
public struct DecodedNotification: Hashable, Sendable {
    /// The verified notification.
    public var notification: ResponseBodyV2DecodedPayload

    /// The verified `data.signedTransactionInfo`, when the notification has one.
    public var transaction: JWSTransactionDecodedPayload?

    /// The verified `data.signedRenewalInfo`, when the notification has one.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?

    /// Bundles a notification with its nested payloads.
    public init(
        notification: ResponseBodyV2DecodedPayload,
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil
    ) {
        self.notification = notification
        self.transaction = transaction
        self.renewalInfo = renewalInfo
    }
}
