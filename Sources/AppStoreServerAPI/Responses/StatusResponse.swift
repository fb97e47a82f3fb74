import AppStoreNotifications

/// The body of Get All Subscription Statuses, as Apple sends it (every field optional, unknown fields ignored).
///
/// [StatusResponse](https://developer.apple.com/documentation/appstoreserverapi/statusresponse)
struct StatusResponse: Decodable, Sendable {
    var environment: AppStoreEnvironment?
    var bundleIdentifier: String?
    var appAppleId: Int64?
    var data: [SubscriptionGroupIdentifierItem]?

    /// [SubscriptionGroupIdentifierItem](https://developer.apple.com/documentation/appstoreserverapi/subscriptiongroupidentifieritem)
    struct SubscriptionGroupIdentifierItem: Decodable, Sendable {
        var subscriptionGroupIdentifier: String?
        var lastTransactions: [LastTransactionsItem]?
    }

    /// [lastTransactionsItem](https://developer.apple.com/documentation/appstoreserverapi/lasttransactionsitem)
    struct LastTransactionsItem: Decodable, Sendable {
        var status: SubscriptionStatus?
        var originalTransactionId: String?
        var signedTransactionInfo: String?
        var signedRenewalInfo: String?
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case environment
        case bundleIdentifier = "bundleId"
        case appAppleId
        case data
    }
}

/// The body of Get Transaction History (v2).
///
/// [HistoryResponse](https://developer.apple.com/documentation/appstoreserverapi/historyresponse)
struct HistoryResponse: Decodable, Sendable {
    var revision: String?
    var hasMore: Bool?
    var bundleIdentifier: String?
    var appAppleId: Int64?
    var environment: AppStoreEnvironment?
    var signedTransactions: [String]?
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case revision
        case hasMore
        case bundleIdentifier = "bundleId"
        case appAppleId
        case environment
        case signedTransactions
    }
}

/// The body of an error answer: `{"errorCode": 4040010, "errorMessage": "…"}`. The message is Apple's and is not
/// passed on (it may echo the request).
///
/// [Error codes](https://developer.apple.com/documentation/appstoreserverapi/error-codes)
struct ErrorPayload: Decodable, Sendable {
    var errorCode: Int64?
}

/// Apple's error codes this client acts on.
enum AppleErrorCode {
    /// InvalidTransactionIdError.
    static let invalidTransactionId: Int64 = 4_000_006
    /// AccountNotFoundRetryableError, AppNotFoundRetryableError, OriginalTransactionIdNotFoundRetryableError.
    static let retryableNotFound: Set<Int64> = [4_040_002, 4_040_004, 4_040_006]
    /// TransactionIdNotFoundError: the identifier is not in this environment (try the other one).
    static let transactionIdNotFound: Int64 = 4_040_010
    /// GeneralInternalRetryableError.
    static let generalInternalRetryable: Int64 = 5_000_001
}
