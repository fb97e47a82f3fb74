import AppStoreNotifications
import AppStoreTestSupport
import Foundation
import Testing

/// Signed App Store data whose numbers are at the edges of `Int64`: refused or decoded, never a trap (issue 11).
@Suite struct HostileSignedDataTests {
    static let extremes: [Int64] = [.min, -1, 0, 32_503_680_000_000, 32_503_680_000_001, .max]

    @Test(arguments: extremes)
    func aTransactionSignedAtAnExtremeDateIsAnsweredNotTrapped(signedDate: Int64) async throws {
        let fixture = try Fixture()
        var transaction = TestPayloads.transaction(environment: .sandbox)
        transaction.signedDate = signedDate
        transaction.expiresDate = signedDate
        transaction.purchaseDate = signedDate
        let jws = try await fixture.signer.sign(transaction)
        // Out of 1970…3000 the date is refused as malformed (swift-certificates traps on dates it cannot encode);
        // inside, the test chain is valid around today only, so the chain check fails by date.
        let expected: SignedDataVerificationError.Code =
            switch signedDate {
            case .min, -1, 32_503_680_000_001, .max: .malformedPayload
            case 0: .certificateNotYetValid
            default: .certificateExpired
            }
        let error = await #expect(throws: SignedDataVerificationError.self) {
            _ = try await fixture.verifier.verifyAndDecodeTransaction(jws)
        }
        #expect(error?.code == expected, "\(error?.message ?? "nothing was thrown")")
    }

    @Test func dateMillisecondsClampInsteadOfTrapping() {
        #expect(Date(timeIntervalSince1970: 1e300).appStoreMilliseconds == .max)
        #expect(Date(timeIntervalSince1970: -1e300).appStoreMilliseconds == .min)
        #expect(Date(timeIntervalSince1970: 9.3e15).appStoreMilliseconds == .max)
        #expect(Date(timeIntervalSince1970: 1.5).appStoreMilliseconds == 1500)
        #expect(Date(appStoreMilliseconds: .max).timeIntervalSince1970 > 9e15)
    }
}
