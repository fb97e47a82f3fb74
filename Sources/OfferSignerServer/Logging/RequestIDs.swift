import Synchronization

/// New request IDs: random-looking version-4 UUIDs in lower case (`2f1c…-…-4…-…`), made without a system call.
///
/// `UUID()` reads the system's random source for every ID (on Linux it opens and reads `/dev/urandom`: ~5 µs, a
/// measurable share of a signature). A request ID correlates log lines; it is no secret (a client may send its
/// own), so it needs to be unique, not unpredictable: each ID is a process-wide counter mixed with a random
/// per-process key by a bijective 64-bit mixer (122 of the 128 bits; the rest are the UUID's version and
/// variant), so the IDs of one process differ and processes differ by their keys.
///
/// ## Usage
///
/// ```swift
/// let id = RequestIDs.next()  // "8f0c2b6e-1d3a-4c55-9a7e-03b1f2d4c6e8"
/// ```
enum RequestIDs {
    private static let keys: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    private static let counter = Atomic<UInt64>(0)

    /// A new ID.
    static func next() -> String {
        let count = counter.add(1, ordering: .relaxed).newValue
        let high = mix(count &+ keys.0) & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000  // version 4
        let low = mix(count ^ keys.1) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000  // the RFC 4122 variant
        return format(high, low)
    }

    /// SplitMix64's finalizer: a bijection of 64-bit values that spreads every input bit over the output.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The 8-4-4-4-12 lower-case hexadecimal form of 128 bits.
    static func format(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var index = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[index] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)]
                    index += 1
                }
            }
            func dash() {
                buffer[index] = UInt8(ascii: "-")
                index += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return index
        }
    }
}
