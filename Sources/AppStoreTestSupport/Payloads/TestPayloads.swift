public import AppStoreNotifications
public import Foundation

/// Builders for App Store payloads with sensible defaults, to be signed by ``TestJWSSigner``.
///
/// Defaults: bundle ``bundleIdentifier``, environment Sandbox, an auto-renewable monthly subscription bought now and expiring
/// in 30 days, `signedDate` now. Change any field afterwards: every payload field is a `var`.
public enum TestPayloads {
    /// The default bundle identifier of test payloads.
    public static let bundleIdentifier = "com.example.offersigner"

    /// The default product of test payloads.
    public static let productIdentifier = "com.example.offersigner.monthly"

    /// A signed transaction of an auto-renewable subscription.
    ///
    /// - Parameters:
    ///   - originalTransactionId: The subscription's key; default `"1000000000000001"`.
    ///   - transactionId: Default: the original transaction identifier (a first purchase).
    ///   - productIdentifier: Default ``productIdentifier``.
    ///   - appAccountToken: The app's UUID for the customer, if any.
    ///   - purchaseDate: Default now.
    ///   - expiresDate: Default 30 days after `purchaseDate`.
    ///   - bundleIdentifier: Default ``bundleIdentifier``.
    ///   - environment: Default Sandbox.
    ///   - signedDate: Default now.
    /// - Returns: The payload.
    public static func transaction(
        originalTransactionId: String = "1000000000000001",
        transactionId: String? = nil,
        productIdentifier: String = TestPayloads.productIdentifier,
        appAccountToken: String? = nil,
        purchaseDate: Date = Date(),
        expiresDate: Date? = nil,
        bundleIdentifier: String = TestPayloads.bundleIdentifier,
        environment: AppStoreEnvironment = .sandbox,
        signedDate: Date = Date()
    ) -> JWSTransactionDecodedPayload {
        var transaction = JWSTransactionDecodedPayload()
        transaction.originalTransactionId = originalTransactionId
        transaction.transactionId = transactionId ?? originalTransactionId
        transaction.webOrderLineItemId = "2000000000000001"
        transaction.bundleIdentifier = bundleIdentifier
        transaction.productIdentifier = productIdentifier
        transaction.subscriptionGroupIdentifier = "21000001"
        transaction.purchaseDate = purchaseDate.appStoreMilliseconds
        transaction.originalPurchaseDate = purchaseDate.appStoreMilliseconds
        transaction.expiresDate = (expiresDate ?? purchaseDate.addingTimeInterval(30 * 86_400)).appStoreMilliseconds
        transaction.quantity = 1
        transaction.type = .autoRenewable
        transaction.appAccountToken = appAccountToken
        transaction.inAppOwnershipType = .purchased
        transaction.signedDate = signedDate.appStoreMilliseconds
        transaction.environment = environment
        transaction.storefront = "USA"
        transaction.storefrontId = "143441"
        transaction.transactionReason = .purchase
        transaction.currency = "USD"
        transaction.price = 4990
        return transaction
    }

    /// Renewal info matching a transaction: same original transaction and product, auto-renew on, renewing at the
    /// transaction's `expiresDate`.
    ///
    /// - Parameters:
    ///   - transaction: The subscription's latest transaction.
    ///   - autoRenewStatus: Default on.
    ///   - signedDate: Default now.
    /// - Returns: The payload.
    public static func renewalInfo(
        for transaction: JWSTransactionDecodedPayload,
        autoRenewStatus: AutoRenewStatus = .on,
        signedDate: Date = Date()
    ) -> JWSRenewalInfoDecodedPayload {
        var renewalInfo = JWSRenewalInfoDecodedPayload()
        renewalInfo.originalTransactionId = transaction.originalTransactionId
        renewalInfo.productIdentifier = transaction.productIdentifier
        renewalInfo.autoRenewProductId = transaction.productIdentifier
        renewalInfo.autoRenewStatus = autoRenewStatus
        renewalInfo.isInBillingRetryPeriod = false
        renewalInfo.recentSubscriptionStartDate = transaction.originalPurchaseDate
        renewalInfo.renewalDate = transaction.expiresDate
        renewalInfo.signedDate = signedDate.appStoreMilliseconds
        renewalInfo.environment = transaction.environment
        renewalInfo.currency = transaction.currency
        renewalInfo.renewalPrice = transaction.price
        return renewalInfo
    }

    /// A Server Notification V2 payload (unsigned; nested payloads already signed).
    ///
    /// - Parameters:
    ///   - notificationType: The type, e.g. `.subscribed`.
    ///   - subtype: The subtype, if any.
    ///   - signedTransactionInfo: A signed transaction, if any.
    ///   - signedRenewalInfo: Signed renewal info, if any.
    ///   - bundleIdentifier: Default ``bundleIdentifier``.
    ///   - environment: Default Sandbox.
    ///   - appAppleId: Needed for Production.
    ///   - status: The subscription status, if any.
    ///   - signedDate: Default now.
    /// - Returns: The payload, with a fresh `notificationUUID` and version `"2.0"`.
    public static func notification(
        _ notificationType: NotificationType,
        subtype: NotificationSubtype? = nil,
        signedTransactionInfo: String? = nil,
        signedRenewalInfo: String? = nil,
        bundleIdentifier: String = TestPayloads.bundleIdentifier,
        environment: AppStoreEnvironment = .sandbox,
        appAppleId: Int64? = nil,
        status: SubscriptionStatus? = nil,
        signedDate: Date = Date()
    ) -> ResponseBodyV2DecodedPayload {
        var data = NotificationData()
        data.appAppleId = appAppleId
        data.bundleIdentifier = bundleIdentifier
        data.bundleVersion = "1"
        data.environment = environment
        data.signedTransactionInfo = signedTransactionInfo
        data.signedRenewalInfo = signedRenewalInfo
        data.status = status
        var notification = ResponseBodyV2DecodedPayload()
        notification.notificationType = notificationType
        notification.subtype = subtype
        notification.notificationUUID = UUID().uuidString.lowercased()
        notification.data = data
        notification.version = "2.0"
        notification.signedDate = signedDate.appStoreMilliseconds
        return notification
    }
}
