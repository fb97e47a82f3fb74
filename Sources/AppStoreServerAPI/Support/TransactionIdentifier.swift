import Crypto
import Foundation

/// A transaction identifier checked before it goes into a URL: ASCII digits only, 1 to 32 of them (Apple's
/// `transactionId`, `originalTransactionId` and `appTransactionId` are decimal numbers of about 16–19 digits).
struct TransactionIdentifier: Hashable, Sendable {
    /// The digits.
    let value: String

    /// The longest identifier accepted.
    static let maximumLength = 32

    /// Validates `value`.
    init(_ value: String) throws(AppStoreServerAPIError) {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maximumLength, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else {
            throw AppStoreServerAPIError(
                .invalidTransactionIdentifier,
                "a transaction identifier is 1 to \(Self.maximumLength) decimal digits"
            )
        }
        self.value = value
    }

    /// A short, stable fingerprint for logs (the first 12 hex digits of its SHA-256), so that log lines can be
    /// correlated without naming the customer's transaction.
    var fingerprint: String {
        SHA256.hash(data: Data(value.utf8)).prefix(6).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }
}
