import AppStoreNotifications
import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOCore

/// The two requests, their answers decoded and every signed item in them verified.
extension AppStoreServerAPIClient {
    func fetchStatuses(
        _ id: TransactionIdentifier,
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> SubscriptionStatuses {
        let body = try await requester.get(
            .subscriptionStatuses,
            path: "/inApps/v1/subscriptions/\(id.value)",
            environment: environment,
            deadline: deadline,
            fingerprint: id.fingerprint
        )
        let response = try decode(StatusResponse.self, from: body)
        try checkApp(
            environment: response.environment,
            bundleIdentifier: response.bundleIdentifier,
            appAppleId: response.appAppleId,
            asked: environment
        )
        let groups = response.data ?? []
        let count = groups.reduce(0) { $0 + ($1.lastTransactions?.count ?? 0) }
        guard count <= Self.maximumSignedItems else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer has more subscriptions than this server accepts")
        }
        var items: [VerifiedLastTransaction] = []
        for group in groups {
            for item in group.lastTransactions ?? [] {
                guard let signedTransaction = item.signedTransactionInfo else {
                    throw AppStoreServerAPIError(.invalidResponse, "a subscription in the App Store's answer has no signed transaction")
                }
                let transaction = try await verifyTransaction(signedTransaction, environment: environment)
                var renewalInfo: JWSRenewalInfoDecodedPayload?
                if let signedRenewalInfo = item.signedRenewalInfo {
                    let renewal = try await verifyRenewalInfo(signedRenewalInfo, environment: environment)
                    guard renewal.originalTransactionId == transaction.originalTransactionId else {
                        throw AppStoreServerAPIError(
                            .invalidResponse,
                            "renewal information in the App Store's answer belongs to another subscription"
                        )
                    }
                    renewalInfo = renewal
                }
                guard item.originalTransactionId == nil || item.originalTransactionId == transaction.originalTransactionId else {
                    throw AppStoreServerAPIError(
                        .invalidResponse,
                        "a subscription in the App Store's answer does not match its signed transaction"
                    )
                }
                items.append(
                    VerifiedLastTransaction(
                        subscriptionGroupIdentifier: group.subscriptionGroupIdentifier,
                        status: item.status,
                        transaction: transaction,
                        renewalInfo: renewalInfo
                    )
                )
            }
        }
        return SubscriptionStatuses(environment: environment, lastTransactions: items)
    }

    func fetchHistory(
        _ id: TransactionIdentifier,
        environment: AppStoreEnvironment,
        deadline: ContinuousClock.Instant
    ) async throws(AppStoreServerAPIError) -> TransactionHistory {
        var transactions: [JWSTransactionDecodedPayload] = []
        var positions: [String: Int] = [:]
        var revisions: Set<String> = []
        var revision: String?
        var complete = false
        for _ in 1...configuration.maximumHistoryPages {
            var query = [("productType", "AUTO_RENEWABLE"), ("sort", "ASCENDING")]
            if let revision { query.append(("revision", revision)) }
            let body = try await requester.get(
                .transactionHistory,
                path: "/inApps/v2/history/\(id.value)",
                query: query,
                environment: environment,
                deadline: deadline,
                fingerprint: id.fingerprint
            )
            let page = try decode(HistoryResponse.self, from: body)
            try checkApp(environment: page.environment, bundleIdentifier: page.bundleIdentifier, appAppleId: page.appAppleId, asked: environment)
            let signed = page.signedTransactions ?? []
            guard signed.count <= Self.maximumSignedItems else {
                throw AppStoreServerAPIError(.invalidResponse, "a page of the App Store's history has more transactions than this server accepts")
            }
            for signedTransaction in signed {
                let transaction = try await verifyTransaction(signedTransaction, environment: environment)
                let key = transaction.transactionId ?? "#\(transactions.count)"
                if let position = positions[key] {
                    if (transaction.signedDate ?? .min) >= (transactions[position].signedDate ?? .min) {
                        transactions[position] = transaction
                    }
                } else {
                    positions[key] = transactions.count
                    transactions.append(transaction)
                }
            }
            guard page.hasMore == true else {
                complete = true
                break
            }
            guard let next = page.revision, !next.isEmpty, next.utf8.count <= 4096, revisions.insert(next).inserted else {
                throw AppStoreServerAPIError(.invalidResponse, "the App Store's history says it has more but gives no new revision")
            }
            revision = next
        }
        if !complete {
            logger.warning(
                "transaction history longer than the page limit; the rest is not read",
                metadata: ["pages": "\(configuration.maximumHistoryPages)", "transaction_fingerprint": "\(id.fingerprint)"]
            )
        }
        return TransactionHistory(environment: environment, transactions: transactions, isComplete: complete)
    }

    func decode<T: Decodable>(_ type: T.Type, from body: ByteBuffer) throws(AppStoreServerAPIError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.readableBytesView))
        } catch {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer could not be read")
        }
    }

    /// The answer is about this app, from the environment asked.
    func checkApp(
        environment: AppStoreEnvironment?,
        bundleIdentifier: String?,
        appAppleId: Int64?,
        asked: AppStoreEnvironment
    ) throws(AppStoreServerAPIError) {
        guard environment == asked else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is not from the environment asked")
        }
        guard bundleIdentifier == configuration.bundleIdentifier else {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is about another app")
        }
        if asked == .production, let expected = verifier.appAppleId, let appAppleId, appAppleId != expected {
            throw AppStoreServerAPIError(.invalidResponse, "the App Store's answer is about another app")
        }
    }

    func verifyTransaction(
        _ signed: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreServerAPIError) -> JWSTransactionDecodedPayload {
        let transaction: JWSTransactionDecodedPayload
        do {
            transaction = try await verifier.verifyAndDecodeTransaction(signed)
        } catch {
            logger.warning("a signed transaction from the App Store failed verification", metadata: ["reason": "\(error.code)"])
            throw AppStoreServerAPIError(
                .invalidResponse,
                "a signed transaction in the App Store's answer failed verification (\(error.code))"
            )
        }
        guard transaction.environment == environment else {
            throw AppStoreServerAPIError(.invalidResponse, "a signed transaction in the App Store's answer is from another environment")
        }
        return transaction
    }

    func verifyRenewalInfo(
        _ signed: String,
        environment: AppStoreEnvironment
    ) async throws(AppStoreServerAPIError) -> JWSRenewalInfoDecodedPayload {
        let renewalInfo: JWSRenewalInfoDecodedPayload
        do {
            renewalInfo = try await verifier.verifyAndDecodeRenewalInfo(signed)
        } catch {
            logger.warning("signed renewal information from the App Store failed verification", metadata: ["reason": "\(error.code)"])
            throw AppStoreServerAPIError(
                .invalidResponse,
                "signed renewal information in the App Store's answer failed verification (\(error.code))"
            )
        }
        guard renewalInfo.environment == environment else {
            throw AppStoreServerAPIError(.invalidResponse, "signed renewal information in the App Store's answer is from another environment")
        }
        return renewalInfo
    }
}
