import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import Testing

@Suite("Payload decoding")
struct PayloadDecodingTests {
    @Test("a realistic notification payload with unknown fields and values decodes")
    func notificationWithUnknownFields() throws {
        let json = #"""
            {
              "notificationType": "DID_CHANGE_RENEWAL_STATUS",
              "subtype": "AUTO_RENEW_DISABLED",
              "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20",
              "data": {
                "appAppleId": 1234567890,
                "bundleId": "com.example.offersigner",
                "bundleVersion": "42",
                "environment": "Production",
                "signedTransactionInfo": "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
                "signedRenewalInfo": "eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
                "status": 1,
                "someFutureDataField": {"nested": [1, 2, 3]}
              },
              "version": "2.0",
              "signedDate": 1700000000123,
              "someFutureTopLevelField": true
            }
            """#
        let payload = try JSONDecoder().decode(ResponseBodyV2DecodedPayload.self, from: Data(json.utf8))
        #expect(payload.notificationType == .didChangeRenewalStatus)
        #expect(payload.subtype == .autoRenewDisabled)
        #expect(payload.notificationUUID == "002e14d5-51f5-4503-b5a8-c3a1af68eb20")
        #expect(payload.data?.appAppleId == 1_234_567_890)
        #expect(payload.data?.environment == .production)
        #expect(payload.data?.status == .active)
        #expect(payload.signedDate == 1_700_000_000_123)
        #expect(Date(appStoreMilliseconds: 1_700_000_000_123).appStoreMilliseconds == 1_700_000_000_123)
    }

    @Test("a realistic transaction with unknown fields and unknown enum values decodes")
    func transactionWithUnknownValues() throws {
        let json = #"""
            {
              "transactionId": "2000000123456789",
              "originalTransactionId": "2000000000000001",
              "webOrderLineItemId": "2000000012345678",
              "bundleId": "com.example.offersigner",
              "productId": "com.example.offersigner.monthly",
              "subscriptionGroupIdentifier": "21000001",
              "purchaseDate": 1700000000000,
              "originalPurchaseDate": 1690000000000,
              "expiresDate": 1702592000000,
              "quantity": 1,
              "type": "Auto-Renewable Subscription",
              "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138",
              "inAppOwnershipType": "PURCHASED",
              "signedDate": 1700000000500,
              "offerType": 9,
              "offerIdentifier": "winback.50",
              "offerDiscountType": "SOMETHING_NEWER",
              "environment": "Production",
              "transactionReason": "RENEWAL",
              "storefront": "USA",
              "storefrontId": "143441",
              "price": 4990,
              "currency": "USD",
              "offerPeriod": "P1M",
              "appTransactionId": "704289572311513211",
              "advancedCommerceInfo": {"requestReferenceId": "x"}
            }
            """#
        let transaction = try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(json.utf8))
        #expect(transaction.type == .autoRenewable)
        #expect(transaction.transactionReason == .renewal)
        #expect(transaction.offerType?.rawValue == 9)
        #expect(transaction.offerDiscountType == OfferDiscountType(rawValue: "SOMETHING_NEWER"))
        #expect(transaction.expiresDate == 1_702_592_000_000)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
    }

    @Test("realistic renewal info decodes")
    func renewalInfo() throws {
        let json = #"""
            {
              "originalTransactionId": "2000000000000001",
              "autoRenewProductId": "com.example.offersigner.yearly",
              "productId": "com.example.offersigner.monthly",
              "autoRenewStatus": 0,
              "expirationIntent": 1,
              "isInBillingRetryPeriod": false,
              "priceIncreaseStatus": 1,
              "gracePeriodExpiresDate": 1702600000000,
              "signedDate": 1700000000500,
              "environment": "Sandbox",
              "recentSubscriptionStartDate": 1690000000000,
              "renewalDate": 1702592000000,
              "eligibleWinBackOfferIds": ["winback.50"],
              "unknownRenewalField": "ignored"
            }
            """#
        let renewalInfo = try JSONDecoder().decode(JWSRenewalInfoDecodedPayload.self, from: Data(json.utf8))
        #expect(renewalInfo.autoRenewStatus == .off)
        #expect(renewalInfo.expirationIntent == .customerCancelled)
        #expect(renewalInfo.priceIncreaseStatus == .customerConsentedOrWasNotifiedWithoutNeedingConsent)
        #expect(renewalInfo.environment == .sandbox)
        #expect(renewalInfo.eligibleWinBackOfferIds == ["winback.50"])
    }

    @Test("payloads round-trip through JSON with Apple's field names")
    func roundTrip() throws {
        let transaction = TestPayloads.transaction()
        let data = try JSONEncoder().encode(transaction)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["originalTransactionId"] as? String == "1000000000000001")
        #expect(object["type"] as? String == "Auto-Renewable Subscription")
        #expect(object["environment"] as? String == "Sandbox")
        #expect(try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: data) == transaction)
    }
}
