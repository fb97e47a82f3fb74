import Crypto
import Foundation
import OfferModel
import OfferSigning
import Synchronization

/// How a customer appears in a log line: a short keyed hash of the `applicationUsername`, never the value.
///
/// An `applicationUsername` is a customer's account identifier (or `appAccountToken`); logs travel further
/// than the store (log shippers, support tickets, screenshots), so they carry only
/// `HMAC-SHA256(key, lower-cased applicationUsername)`, its first 12 hex characters (48 bits: enough to follow
/// one customer through the log, useless for guessing the identifier back without the key).
///
/// The key is random per process unless `OFFER_SIGNER_LOG_HASH_KEY` sets one (``configure(key:)``, called by
/// `serve`): with a shared key, every replica hashes a customer the same way, and an operator who has the key
/// can compute the hash of a customer a ticket names (`offer-signer` prints nothing of the sort; use
/// `printf %s "$user" | openssl dgst -sha256 -hmac "$KEY" | cut -c1-12` on the lower-cased value). The store's
/// rows (issued signatures, audit) keep the real value: admins query them.
public enum CustomerHash {
    /// The HMAC with the key already absorbed (a value: each hash updates its own copy, the key's two blocks hashed
    /// once per key rather than once per customer).
    private static let keyed = Mutex(HMAC<SHA256>(key: SymmetricKey(size: .bits256)))

    /// Uses `key` (the UTF-8 bytes of `OFFER_SIGNER_LOG_HASH_KEY`) from now on.
    public static func configure(key text: String) {
        keyed.withLock { $0 = HMAC<SHA256>(key: SymmetricKey(data: Data(text.utf8))) }
    }

    /// The hash of a customer: 12 lower-case hex characters.
    public static func of(_ applicationUsername: String) -> String {
        of(applicationUsername, with: keyed.withLock { $0 })
    }

    /// The hash of a customer with the HMAC given (its key absorbed).
    static func of(_ applicationUsername: String, with keyed: HMAC<SHA256>) -> String {
        var mac = keyed
        var lowered = applicationUsername.lowercased()
        lowered.withUTF8 { mac.update(data: UnsafeRawBufferPointer($0)) }
        return mac.finalize().withUnsafeBytes { $0.hexString(prefix: 6) }
    }

    /// A customer for a log line: `<bundleIdentifier>/<hash>`.
    public static func of(_ key: CustomerKey) -> String {
        "\(key.bundleIdentifier)/\(of(key.applicationUsername))"
    }
}
