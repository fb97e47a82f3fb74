/// A compact JWS (RFC 7515 §7.1) split at its two dots: three base64url segments, none decoded yet.
///
/// ``SignedDataChainVerifier`` reads the App Store's JWS through this rather than a general JWT parser: the header
/// segment of every JWS signed with one certificate chain is the same text, so a header already verified is known by
/// its segment and not decoded again (docs/notifications.md, "What is verified, and why").
struct CompactJWS {
    /// The header segment, as sent (base64url).
    let header: ArraySlice<UInt8>
    /// The payload segment, as sent (base64url).
    let payload: ArraySlice<UInt8>
    /// The signature segment, as sent (base64url).
    let signature: ArraySlice<UInt8>
    /// What the signature covers: the header and payload segments with the dot between them.
    let signingInput: ArraySlice<UInt8>

    /// `nil` unless `token` holds exactly two dots.
    init?(_ token: [UInt8]) {
        let dot = UInt8(ascii: ".")
        guard let first = token.firstIndex(of: dot),
            let second = token[(first + 1)...].firstIndex(of: dot),
            !token[(second + 1)...].contains(dot)
        else { return nil }
        header = token[..<first]
        payload = token[(first + 1)..<second]
        signature = token[(second + 1)...]
        signingInput = token[..<second]
    }
}

/// Base64url without padding (RFC 7515 §2): only the alphabet's 64 characters, no padding, no whitespace, and no
/// length a base64 text cannot have. The unused low bits of a last character are ignored, as jwt-kit's decoder
/// ignored them (the signature covers the text, not the bytes).
enum Base64URL {
    /// The bytes `text` encodes; `nil` when it is not base64url.
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let count = text.count
        guard count % 4 != 1 else { return nil }
        let capacity = count / 4 * 3 + max(count % 4 - 1, 0)
        return text.withUnsafeBufferPointer { input -> [UInt8]? in
            table.withUnsafeBufferPointer { table -> [UInt8]? in
                var valid = true
                let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { output, initialized in
                    var read = 0
                    var written = 0
                    // Four characters (24 bits) make three bytes; a value of 64 or more marks a byte outside the
                    // alphabet, and any one of them makes the text invalid.
                    while read + 4 <= count {
                        let a = UInt32(table[Int(input[read])])
                        let b = UInt32(table[Int(input[read + 1])])
                        let c = UInt32(table[Int(input[read + 2])])
                        let d = UInt32(table[Int(input[read + 3])])
                        if (a | b | c | d) >= 64 { valid = false }
                        let bits = a << 18 | b << 12 | c << 6 | d
                        output[written] = UInt8(truncatingIfNeeded: bits >> 16)
                        output[written + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                        output[written + 2] = UInt8(truncatingIfNeeded: bits)
                        read += 4
                        written += 3
                    }
                    // Two or three characters left: one or two bytes.
                    if read < count {
                        var bits: UInt32 = 0
                        var left = 0
                        while read < count {
                            let value = UInt32(table[Int(input[read])])
                            if value >= 64 { valid = false }
                            bits = bits << 6 | (value & 63)
                            read += 1
                            left += 1
                        }
                        bits <<= UInt32(6 * (4 - left))
                        output[written] = UInt8(truncatingIfNeeded: bits >> 16)
                        written += 1
                        if left == 3 {
                            output[written] = UInt8(truncatingIfNeeded: bits >> 8)
                            written += 1
                        }
                    }
                    initialized = written
                }
                return valid ? bytes : nil
            }
        }
    }

    /// Each byte's value in the alphabet (`A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_`); 255 for any other byte.
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (value, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(character)] = UInt8(value)
        }
        return table
    }()
}
