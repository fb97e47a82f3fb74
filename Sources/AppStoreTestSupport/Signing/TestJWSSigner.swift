public import AppStoreNotifications
public import Foundation
import JWTKit
import SwiftASN1
public import X509

/// Signs payloads as the App Store does: a compact JWS, `alg` ES256, the leaf key of a ``TestCertificateChain``,
/// and `x5c` = `[leaf, intermediate, root]` as base64 DER.
///
/// ## Usage
///
/// ```swift
/// let signer = TestJWSSigner(chain: try TestCertificateChain())
/// let transaction = TestPayloads.transaction(originalTransactionId: "1000000000000001")
/// let signedPayload = try await signer.signNotification(
///     .subscribed, subtype: .initialBuy,
///     transaction: transaction, renewalInfo: TestPayloads.renewalInfo(for: transaction))
/// // POST {"signedPayload": signedPayload} to /v1/notifications/appstore
/// ```
public struct TestJWSSigner: Sendable {
    /// The chain whose leaf key signs.
    public let chain: TestCertificateChain

    /// The certificates put in `x5c`; default ``TestCertificateChain/x5c``. Set two or four to test the count check.
    public var x5c: [Certificate]

    /// Creates a signer for `chain`.
    ///
    /// - Parameter chain: The chain whose leaf key signs and whose certificates go in `x5c`.
    public init(chain: TestCertificateChain) {
        self.chain = chain
        self.x5c = chain.x5c
    }

    /// Signs any payload.
    ///
    /// - Parameter payload: Encoded with `JSONEncoder` (use `Int64` milliseconds for dates, as Apple does).
    /// - Returns: The compact JWS.
    /// - Throws: If encoding or signing fails.
    public func sign(_ payload: some Encodable & Sendable) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: chain.leafKey))
        var header = JWTHeader()
        header.x5c = try x5c.map { try $0.serializeAsPEM().pemString }
        return try await keys.sign(EncodablePayload(value: payload), header: header)
    }

    /// Signs a notification, signing its transaction and renewal info first (with the same chain).
    ///
    /// - Parameters:
    ///   - notificationType: The notification type, e.g. `.didRenew`.
    ///   - subtype: The subtype, if any, e.g. `.autoRenewDisabled`.
    ///   - transaction: Signed into `data.signedTransactionInfo`, if given.
    ///   - renewalInfo: Signed into `data.signedRenewalInfo`, if given.
    ///   - bundleIdentifier: `data.bundleIdentifier`; default ``TestPayloads/bundleIdentifier``.
    ///   - environment: `data.environment`; default Sandbox.
    ///   - appAppleId: `data.appAppleId`; needed for Production.
    ///   - status: `data.status`, if any.
    ///   - signedDate: The notification's `signedDate`; default now.
    /// - Returns: The notification's `signedPayload`.
    /// - Throws: If signing fails.
    public func signNotification(
        _ notificationType: NotificationType,
        subtype: NotificationSubtype? = nil,
        transaction: JWSTransactionDecodedPayload? = nil,
        renewalInfo: JWSRenewalInfoDecodedPayload? = nil,
        bundleIdentifier: String = TestPayloads.bundleIdentifier,
        environment: AppStoreEnvironment = .sandbox,
        appAppleId: Int64? = nil,
        status: SubscriptionStatus? = nil,
        signedDate: Date = Date()
    ) async throws -> String {
        var signedTransaction: String?
        if let transaction {
            signedTransaction = try await sign(transaction)
        }
        var signedRenewalInfo: String?
        if let renewalInfo {
            signedRenewalInfo = try await sign(renewalInfo)
        }
        let notification = TestPayloads.notification(
            notificationType,
            subtype: subtype,
            signedTransactionInfo: signedTransaction,
            signedRenewalInfo: signedRenewalInfo,
            bundleIdentifier: bundleIdentifier,
            environment: environment,
            appAppleId: appAppleId,
            status: status,
            signedDate: signedDate
        )
        return try await sign(notification)
    }
}

/// Lets jwt-kit sign any `Encodable`: jwt-kit wants a `JWTPayload`, which is also `Decodable`.
private struct EncodablePayload<Value: Encodable & Sendable>: JWTPayload {
    let value: Value

    init(value: Value) {
        self.value = value
    }

    init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "EncodablePayload is sign-only"))
    }

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
