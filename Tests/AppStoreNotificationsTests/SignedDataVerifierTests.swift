import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import Testing
import X509

@Suite("SignedDataVerifier accepts App Store data")
struct SignedDataVerifierAcceptanceTests {
    @Test("a good notification verifies and decodes, with its nested transaction and renewal info")
    func goodNotification() async throws {
        let fixture = try Fixture()
        let signedPayload = try await fixture.subscribed()

        let decoded = try await fixture.verifier.verifyAndDecodeNotificationContents(signedPayload)
        #expect(decoded.notification.notificationType == .subscribed)
        #expect(decoded.notification.subtype == .initialBuy)
        #expect(decoded.notification.version == "2.0")
        #expect(decoded.notification.data?.bundleIdentifier == TestPayloads.bundleIdentifier)
        #expect(decoded.notification.data?.environment == .sandbox)
        #expect(decoded.notification.data?.status == .active)
        let transaction = try #require(decoded.transaction)
        #expect(transaction.originalTransactionId == "1000000000000001")
        #expect(transaction.productIdentifier == TestPayloads.productIdentifier)
        #expect(transaction.type == .autoRenewable)
        let renewalInfo = try #require(decoded.renewalInfo)
        #expect(renewalInfo.autoRenewStatus == .on)
        #expect(renewalInfo.originalTransactionId == transaction.originalTransactionId)

        let plain = try await fixture.verifier.verifyAndDecodeNotification(signedPayload)
        #expect(plain == decoded.notification)
        let nested = try #require(plain.data?.signedTransactionInfo)
        #expect(try await fixture.verifier.verifyAndDecodeTransaction(nested) == transaction)
    }

    @Test("a signed transaction and renewal info verify on their own (StoreKit 2 jwsRepresentation)")
    func transactionAndRenewalInfo() async throws {
        let fixture = try Fixture()
        let transaction = TestPayloads.transaction(appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        let decoded = try await fixture.verifier.verifyAndDecodeTransaction(try await fixture.signer.sign(transaction))
        #expect(decoded == transaction)
        let renewalInfo = TestPayloads.renewalInfo(for: transaction, autoRenewStatus: .off)
        #expect(try await fixture.verifier.verifyAndDecodeRenewalInfo(try await fixture.signer.sign(renewalInfo)) == renewalInfo)
    }

    @Test("validity is checked at signedDate: a payload signed while the leaf was valid passes after it expired")
    func validityAtSignedDate() async throws {
        let now = Date()
        var options = TestCertificateChain.Options(now: now)
        options.leafValidity = now.addingTimeInterval(-30 * 86_400)...now.addingTimeInterval(-10 * 86_400)
        let fixture = try Fixture(options)
        let signedDate = now.addingTimeInterval(-20 * 86_400)
        let decoded = try await fixture.verifier.verifyAndDecodeNotificationContents(
            try await fixture.subscribed(signedDate: signedDate)
        )
        #expect(decoded.notification.signedDate == signedDate.appStoreMilliseconds)
        #expect(decoded.transaction != nil)
    }

    @Test("Production notifications pass with the configured appAppleId")
    func production() async throws {
        let fixture = try Fixture()
        let decoded = try await fixture.verifier.verifyAndDecodeNotification(
            try await fixture.subscribed(environment: .production, appAppleId: Fixture.appAppleId)
        )
        #expect(decoded.data?.environment == .production)
        #expect(decoded.data?.appAppleId == Fixture.appAppleId)
    }

    @Test("an unknown notification type and subtype decode as raw values")
    func unknownNotificationType() async throws {
        let fixture = try Fixture()
        let signed = try await fixture.signer.signNotification(
            NotificationType(rawValue: "SOMETHING_NEW"),
            subtype: NotificationSubtype(rawValue: "ALSO_NEW")
        )
        let decoded = try await fixture.verifier.verifyAndDecodeNotification(signed)
        #expect(decoded.notificationType?.rawValue == "SOMETHING_NEW")
        #expect(decoded.subtype?.rawValue == "ALSO_NEW")
    }

    @Test("a TEST notification (no transaction) verifies")
    func testNotification() async throws {
        let fixture = try Fixture()
        let decoded = try await fixture.verifier.verifyAndDecodeNotificationContents(
            try await fixture.signer.signNotification(.test)
        )
        #expect(decoded.notification.notificationType == .test)
        #expect(decoded.transaction == nil && decoded.renewalInfo == nil)
    }

    @Test("a summary notification is checked against its summary's bundle and environment")
    func summaryNotification() async throws {
        let fixture = try Fixture()
        var summary = NotificationSummary()
        summary.bundleIdentifier = TestPayloads.bundleIdentifier
        summary.environment = .sandbox
        summary.succeededCount = 10
        var notification = TestPayloads.notification(.renewalExtension, subtype: .summary)
        notification.data = nil
        notification.summary = summary
        let decoded = try await fixture.verifier.verifyAndDecodeNotification(try await fixture.signer.sign(notification))
        #expect(decoded.summary?.succeededCount == 10)

        notification.summary?.bundleIdentifier = "com.other.app"
        let error = await #expect(throws: SignedDataVerificationError.self) {
            try await fixture.verifier.verifyAndDecodeNotification(try await fixture.signer.sign(notification))
        }
        #expect(error?.code == .wrongBundleId)
    }

    @Test("a whole subscription lifecycle verifies in order")
    func lifecycle() async throws {
        let fixture = try Fixture()
        let start = Date().addingTimeInterval(-90 * 86_400)
        let first = TestPayloads.transaction(purchaseDate: start)
        var renewal = TestPayloads.transaction(transactionId: "1000000000000002", purchaseDate: start.addingTimeInterval(30 * 86_400))
        renewal.originalPurchaseDate = first.originalPurchaseDate
        renewal.transactionReason = .renewal
        let steps: [(NotificationType, NotificationSubtype?, JWSTransactionDecodedPayload, AutoRenewStatus)] = [
            (.subscribed, .initialBuy, first, .on),
            (.didRenew, nil, renewal, .on),
            (.didChangeRenewalStatus, .autoRenewDisabled, renewal, .off),
            (.expired, .voluntary, renewal, .off),
        ]
        var seen: [String] = []
        for (type, subtype, transaction, autoRenew) in steps {
            let signed = try await fixture.signer.signNotification(
                type,
                subtype: subtype,
                transaction: transaction,
                renewalInfo: TestPayloads.renewalInfo(for: transaction, autoRenewStatus: autoRenew)
            )
            let decoded = try await fixture.verifier.verifyAndDecodeNotificationContents(signed)
            #expect(decoded.renewalInfo?.autoRenewStatus == autoRenew)
            #expect(decoded.transaction?.originalTransactionId == first.originalTransactionId)
            seen.append([type.rawValue, subtype?.rawValue].compactMap { $0 }.joined(separator: "/"))
        }
        #expect(seen == ["SUBSCRIBED/INITIAL_BUY", "DID_RENEW", "DID_CHANGE_RENEWAL_STATUS/AUTO_RENEW_DISABLED", "EXPIRED/VOLUNTARY"])
    }
}
