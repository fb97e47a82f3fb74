/// What a PNG's first chunks say: its dimensions and whether it can be transparent. Read without decoding the
/// image, within ``scanLimit`` bytes and ``chunkLimit`` chunks.
///
/// PNG (ISO/IEC 15948, RFC 2083): the 8-byte signature, then chunks of a 4-byte big-endian length, a 4-byte type,
/// the data and a 4-byte CRC; `IHDR` first (13 bytes: width, height, bit depth, colour type, …); `tRNS`, if any,
/// before the first `IDAT`. Colour types 4 and 6 carry an alpha channel; a `tRNS` chunk makes any other type
/// transparent.
public struct PNGHeader: Sendable, Hashable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// `IHDR`'s colour type (0 grey, 2 RGB, 3 palette, 4 grey + alpha, 6 RGB + alpha).
    public let colourType: UInt8
    /// Whether a `tRNS` chunk precedes the image data.
    public let hasTransparencyChunk: Bool

    /// Whether the image can have transparent pixels.
    public var hasAlpha: Bool { colourType == 4 || colourType == 6 || hasTransparencyChunk }

    /// The most bytes read looking for `tRNS` before `IDAT`.
    static let scanLimit = 1 << 20
    /// The most chunks read before `IDAT`.
    static let chunkLimit = 256

    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Reads the header of `bytes` (the file, or at least its first ``scanLimit`` bytes).
    ///
    /// - Throws: ``RetentionMessagingError/Code/invalidImage`` when it is not a PNG or its header is malformed.
    public init(_ bytes: [UInt8]) throws(RetentionMessagingError) {
        guard bytes.count >= 33, Array(bytes[0..<8]) == Self.signature else {
            throw RetentionMessagingError(.invalidImage, "the image is not a PNG file")
        }
        guard Self.uint32(bytes, 8) == 13, bytes[12..<16].elementsEqual("IHDR".utf8) else {
            throw RetentionMessagingError(.invalidImage, "the PNG file does not start with its header chunk (IHDR)")
        }
        let width = Self.uint32(bytes, 16)
        let height = Self.uint32(bytes, 20)
        let bitDepth = bytes[24]
        let colourType = bytes[25]
        guard width > 0, height > 0, width <= 0x7FFF_FFFF, height <= 0x7FFF_FFFF, [0, 2, 3, 4, 6].contains(colourType),
            [1, 2, 4, 8, 16].contains(bitDepth)
        else {
            throw RetentionMessagingError(.invalidImage, "the PNG file's header chunk is not valid")
        }
        var offset = 33  // signature 8 + IHDR (4 + 4 + 13 + 4)
        var transparency = false
        var chunks = 0
        while offset + 8 <= bytes.count, chunks < Self.chunkLimit {
            let length = Int(Self.uint32(bytes, offset))
            let type = bytes[(offset + 4)..<(offset + 8)]
            if type.elementsEqual("IDAT".utf8) || type.elementsEqual("IEND".utf8) { break }
            if type.elementsEqual("tRNS".utf8) {
                transparency = true
                break
            }
            guard length <= Self.scanLimit else { break }
            offset += 12 + length
            chunks += 1
        }
        self.width = Int(width)
        self.height = Int(height)
        self.colourType = colourType
        self.hasTransparencyChunk = transparency
    }

    private static func uint32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
