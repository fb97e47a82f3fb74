import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension UUID {
    /// A fresh version-4 UUID — 122 bits from the system's cryptographic random source — for a signature's nonce.
    ///
    /// The same kind of value as `UUID()`, made more cheaply: on Linux `UUID()` opens, reads and closes
    /// `/dev/urandom` for every UUID (~7 µs of a signature, 3 % of the server's CPU in a profile:
    /// docs/PERFORMANCE.md); here the bits come from ``RandomPool``, which asks the kernel (`getrandom`) for 32
    /// nonces' worth at a time instead of twice a nonce — as Node's `crypto.randomUUID()` keeps an entropy cache.
    @usableFromInline static func randomVersion4() -> UUID {  // the signers' default nonce, not API
        let (high, low) = RandomPool.shared.next128()
        return version4(high: high, low: low)
    }

    /// The version-4 UUID of 128 random bits: 4 bits become the version (`4`), 2 the RFC 4122 variant (`10`).
    static func version4(high: UInt64, low: UInt64) -> UUID {
        let high = (high & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000).bigEndian
        let low = (low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000).bigEndian
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { bytes in
            withUnsafeBytes(of: high) { bytes.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
            withUnsafeBytes(of: low) { (bytes.baseAddress! + 8).copyMemory(from: $0.baseAddress!, byteCount: 8) }
        }
        return UUID(uuid: uuid)
    }

    /// The UUID as a lower-case string with dashes (`uuidString.lowercased()`), written in one pass: what a
    /// signature's payload carries.
    var lowercasedString: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits = Array("0123456789abcdef".utf8)
                var index = 0
                for (position, byte) in bytes.enumerated() {
                    if position == 4 || position == 6 || position == 8 || position == 10 {
                        text[index] = UInt8(ascii: "-")
                        index += 1
                    }
                    text[index] = digits[Int(byte >> 4)]
                    text[index + 1] = digits[Int(byte & 0x0F)]
                    index += 2
                }
                return index
            }
        }
    }
}

/// Random bits from the system's cryptographic source (`arc4random_buf`: `getrandom` on Linux), fetched 512 bytes at
/// a time and handed out once each. Never forks into a child that would share the buffer (the service does not fork
/// without exec).
final class RandomPool: Sendable {
    static let shared = RandomPool()

    private struct Buffer: ~Copyable {
        /// 64 words: 32 nonces a refill.
        var words = [UInt64](repeating: 0, count: 64)
        /// The next word not handed out; `words.count`: empty.
        var next = 64
    }

    private let buffer = Mutex(Buffer())

    /// 128 random bits, as two words.
    func next128() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.next + 2 > buffer.words.count {
                buffer.words.withUnsafeMutableBytes { bytes in arc4random_buf(bytes.baseAddress!, bytes.count) }
                buffer.next = 0
            }
            defer {
                // Handed out once: the words are overwritten, so a later read of the buffer cannot repeat them.
                buffer.words[buffer.next] = 0
                buffer.words[buffer.next + 1] = 0
                buffer.next += 2
            }
            return (buffer.words[buffer.next], buffer.words[buffer.next + 1])
        }
    }
}
