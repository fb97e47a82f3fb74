import AppStoreNotifications
import AppStoreTestSupport
import Foundation

/// Get All Subscription Statuses' answer (`StatusResponse`) as Apple documents it, for the fake to send.
public struct StatusBody: Encodable, Sendable {
    public struct Group: Encodable, Sendable {
        public var subscriptionGroupIdentifier: String
        public var lastTransactions: [Item]

        public init(subscriptionGroupIdentifier: String, lastTransactions: [Item]) {
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.lastTransactions = lastTransactions
        }
    }

    public struct Item: Encodable, Sendable {
        public var status: Int32
        public var originalTransactionId: String
        public var signedTransactionInfo: String
        public var signedRenewalInfo: String

        public init(status: Int32, originalTransactionId: String, signedTransactionInfo: String, signedRenewalInfo: String) {
            self.status = status
            self.originalTransactionId = originalTransactionId
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }

    public var environment: String
    public var bundleIdentifier: String
    public var appAppleId: Int64
    public var data: [Group]

    public init(environment: String, bundleIdentifier: String, appAppleId: Int64, data: [Group]) {
        self.environment = environment
        self.bundleIdentifier = bundleIdentifier
        self.appAppleId = appAppleId
        self.data = data
    }
    /// Apple's JSON names; the code spells bundle, product and key identifiers long-form.
    enum CodingKeys: String, CodingKey {
        case environment
        case bundleIdentifier = "bundleId"
        case appAppleId
        case data
    }
}

/// Get Transaction History's answer (`HistoryResponse`) as Apple documents it.
public struct HistoryBody: Encodable, Sendable {
    public var revision: String
    public var hasMore: Bool
    public var bundleIdentifier: String
    public var appAppleId: Int64
    public var environment: String
    public var signedTransactions: [String]

    public init(revision: String, hasMore: Bool, bundleIdentifier: String, appAppleId: Int64, environment: String, signedTransactions: [String]) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleIdentifier = bundleIdentifier
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
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

extension FakeResponse {
    /// A statuses answer with one subscription per transaction, each signed by `signer`.
    public static func statuses(
        _ items: [(status: SubscriptionStatus, transaction: JWSTransactionDecodedPayload, renewalInfo: JWSRenewalInfoDecodedPayload)],
        signer: TestJWSSigner,
        environment: AppStoreEnvironment,
        bundleIdentifier: String,
        appAppleId: Int64 = FakeAppStore.appAppleId
    ) async throws -> FakeResponse {
        var groups: [String: [StatusBody.Item]] = [:]
        for item in items {
            groups[item.transaction.subscriptionGroupIdentifier ?? "", default: []].append(
                StatusBody.Item(
                    status: item.status.rawValue,
                    originalTransactionId: item.transaction.originalTransactionId ?? "",
                    signedTransactionInfo: try await signer.sign(item.transaction),
                    signedRenewalInfo: try await signer.sign(item.renewalInfo)
                )
            )
        }
        return .json(
            StatusBody(
                environment: environment.rawValue,
                bundleIdentifier: bundleIdentifier,
                appAppleId: appAppleId,
                data: groups.sorted { $0.key < $1.key }.map { StatusBody.Group(subscriptionGroupIdentifier: $0.key, lastTransactions: $0.value) }
            )
        )
    }

    /// One complete page of history, signed by `signer`.
    public static func history(
        _ transactions: [JWSTransactionDecodedPayload],
        signer: TestJWSSigner,
        environment: AppStoreEnvironment,
        bundleIdentifier: String,
        appAppleId: Int64 = FakeAppStore.appAppleId
    ) async throws -> FakeResponse {
        var signed: [String] = []
        for transaction in transactions { signed.append(try await signer.sign(transaction)) }
        return .json(
            HistoryBody(
                revision: "r1",
                hasMore: false,
                bundleIdentifier: bundleIdentifier,
                appAppleId: appAppleId,
                environment: environment.rawValue,
                signedTransactions: signed
            )
        )
    }
}

/// A page of Get Notification History as Apple shapes it (`NotificationHistoryResponse`).
public struct NotificationHistoryBody: Encodable, Sendable {
    public struct Item: Encodable, Sendable {
        public struct SendAttempt: Encodable, Sendable {
            public var attemptDate: Int64
            public var sendAttemptResult: String
        }

        public var signedPayload: String
        public var sendAttemptResults: [SendAttempt]

        /// A notification Apple sent once, successfully, at `sent`.
        public init(signedPayload: String, sent: Int64) {
            self.signedPayload = signedPayload
            self.sendAttemptResults = [SendAttempt(attemptDate: sent, sendAttemptResult: "SUCCESS")]
        }
    }

    public var paginationToken: String
    public var hasMore: Bool
    public var notificationHistory: [Item]

    public init(paginationToken: String, hasMore: Bool, notificationHistory: [Item]) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }

    /// A page of `signedPayloads`, each sent once, successfully, at `sent` (UNIX milliseconds).
    public init(paginationToken: String, hasMore: Bool, signedPayloads: [String], sent: Int64 = 0) {
        self.init(paginationToken: paginationToken, hasMore: hasMore, notificationHistory: signedPayloads.map { Item(signedPayload: $0, sent: sent) })
    }

    /// The span a Get Notification History request asks for (`NotificationHistoryRequest`), in UNIX milliseconds.
    public struct Span: Decodable, Sendable {
        public var startDate: Int64
        public var endDate: Int64

        /// The span of a request's body; `nil` when it has none.
        public init?(body: String) {
            guard let span = try? JSONDecoder().decode(Span.self, from: Data(body.utf8)) else { return nil }
            self = span
        }
    }
}

extension FakeResponse {
    /// Get Notification History's answer for `request`: `signedPayloads` in pages of `pageSize`, the page chosen by
    /// the request's `paginationToken` (`page-<n>`).
    public static func notificationHistory(_ signedPayloads: [String], pageSize: Int, for request: FakeRequest) -> FakeResponse {
        let page = request.query["paginationToken"].flatMap { Int($0.dropFirst("page-".count)) } ?? 0
        let start = min(page * pageSize, signedPayloads.count)
        let end = min(start + pageSize, signedPayloads.count)
        let sent = NotificationHistoryBody.Span(body: request.body)?.startDate ?? 0
        return .json(
            NotificationHistoryBody(
                paginationToken: "page-\(page + 1)",
                hasMore: end < signedPayloads.count,
                notificationHistory: signedPayloads[start..<end].map { NotificationHistoryBody.Item(signedPayload: $0, sent: sent) }
            )
        )
    }
}
