/// The body of Get Notification History (`NotificationHistoryRequest`): a time span in UNIX milliseconds, no filter.
///
/// [NotificationHistoryRequest](https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryrequest)
struct NotificationHistoryRequest: Encodable {
    var startDate: Int64
    var endDate: Int64
}

/// The answer of Get Notification History, as Apple names its fields.
///
/// [NotificationHistoryResponse](https://developer.apple.com/documentation/appstoreserverapi/notificationhistoryresponse)
struct NotificationHistoryResponse: Decodable {
    /// The token of the next page; the same as asked when there is none.
    var paginationToken: String?
    /// Whether another page follows.
    var hasMore: Bool?
    var notificationHistory: [Item]?

    struct Item: Decodable {
        /// The notification as it was sent (`signedPayload` of `ResponseBodyV2`).
        var signedPayload: String?
    }
}
