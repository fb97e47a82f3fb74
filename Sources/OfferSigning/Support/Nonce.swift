import Foundation

extension UUID {
    /// A fresh version-4 UUID — 122 bits from the system's cryptographic random source — for a signature's nonce.
    ///
    /// The same kind of value as `UUID()`, made more cheaply: on Linux `UUID()` opens, reads and closes
    /// `/dev/urandom` for every UUID (~7 µs of a signature, 3 % of the server's CPU in a profile:
    /// docs/PERFORMANCE.md), where `SystemRandomNumberGenerator` asks the kernel with `getrandom`, no file.
    @usableFromInline static func randomVersion4() -> UUID {  // the signers' default nonce, not API
        var generator = SystemRandomNumberGenerator()
        return version4(high: generator.next(), low: generator.next())
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
