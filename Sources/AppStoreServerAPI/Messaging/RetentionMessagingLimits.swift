import Foundation

/// Apple's documented limits of the Retention Messaging API, and the checks this client makes before sending.
///
/// Lengths are counted in UTF-16 code units — never fewer than the characters Apple counts (Apple's libraries check
/// `len()` in Python, `length()` in Java), so a value that passes here is not refused by Apple for its length.
///
/// Sources: Apple's *Upload Image*, *Upload Message*, `UploadMessageRequestBody`, `BulletPoint`, `realtimeURL` and
/// *Identifying rate limits* pages, and the models of Apple's app-store-server-library (3.1.1). The bullet-point
/// image's 1024 × 1024 px could not be confirmed in the Apple pages this was built from (their excerpts stop before
/// that paragraph); it is the figure the issue gives.
public enum RetentionMessagingLimits {
    /// `header`: at most 66 characters.
    public static let headerLength = 66
    /// `body`: at most 144 characters.
    public static let bodyLength = 144
    /// `altText`: at most 150 characters.
    public static let altTextLength = 150
    /// `bulletPoints`: at most 5.
    public static let bulletPoints = 5
    /// A bullet point's `text`: at most 66 characters.
    public static let bulletPointTextLength = 66
    /// `realtimeURL`: at most 256 characters, starting with `https://`.
    public static let realtimeURLLength = 256
    /// Images per app.
    public static let imagesPerApp = 2000
    /// Messages per app.
    public static let messagesPerApp = 2000
    /// A full-size image's width.
    public static let fullSizeWidth = 3840
    /// A full-size image's height range.
    public static let fullSizeHeights = 160...2160
    /// A bullet-point image's side (square).
    public static let bulletPointSide = 1024
    /// The largest PNG file this client sends (its own bound; Apple documents none).
    public static let imageBytes = 32 << 20

    /// The identifier in the form sent: a UUID, lowercase.
    ///
    /// - Throws: ``RetentionMessagingError/Code/invalidIdentifier``.
    static func identifier(_ value: String, of what: String) throws(RetentionMessagingError) -> String {
        guard value.utf8.count == 36, let uuid = UUID(uuidString: value) else {
            throw RetentionMessagingError(.invalidIdentifier, "the \(what) identifier must be a UUID")
        }
        return uuid.uuidString.lowercased()
    }

    /// Checks a message against every documented limit.
    ///
    /// - Parameters:
    ///   - message: The message.
    ///   - textOnly: `false` for a message answered with a promotional offer or an alternate product, which may carry
    ///     no image and no bullet points.
    /// - Throws: ``RetentionMessagingError`` naming the first limit broken.
    public static func check(_ message: RetentionMessage, textOnly: Bool = true) throws(RetentionMessagingError) {
        guard !message.header.isEmpty, !message.body.isEmpty else {
            throw RetentionMessagingError(.missingText, "a message needs a header and a body")
        }
        guard message.header.utf16.count <= headerLength else {
            throw RetentionMessagingError(.headerTooLong, "the header has \(message.header.utf16.count) characters; at most \(headerLength)")
        }
        guard message.body.utf16.count <= bodyLength else {
            throw RetentionMessagingError(.bodyTooLong, "the body has \(message.body.utf16.count) characters; at most \(bodyLength)")
        }
        if !textOnly, message.image != nil || !(message.bulletPoints ?? []).isEmpty {
            throw RetentionMessagingError(
                .imageNotAllowed,
                "only a text message may carry an image or bullet points, not one shown with an offer or another plan"
            )
        }
        if let image = message.image {
            _ = try identifier(image.imageIdentifier, of: "image")
            guard image.altText.utf16.count <= altTextLength else {
                throw RetentionMessagingError(
                    .altTextTooLong,
                    "the image's alternative text has \(image.altText.utf16.count) characters; at most \(altTextLength)"
                )
            }
        }
        if message.headerPosition == .aboveImage, message.image == nil {
            throw RetentionMessagingError(.aboveImageRequiresImage, "a header above the image needs an image")
        }
        let bullets = message.bulletPoints ?? []
        guard bullets.count <= bulletPoints else {
            throw RetentionMessagingError(.tooManyBulletPoints, "the message has \(bullets.count) bullet points; at most \(bulletPoints)")
        }
        for (index, bullet) in bullets.enumerated() {
            guard !bullet.text.isEmpty, bullet.text.utf16.count <= bulletPointTextLength else {
                throw RetentionMessagingError(
                    .bulletPointTextTooLong,
                    "bullet point \(index + 1) has \(bullet.text.utf16.count) characters; 1 to \(bulletPointTextLength)"
                )
            }
            _ = try identifier(bullet.imageIdentifier, of: "bullet point image")
            guard bullet.altText.utf16.count <= altTextLength else {
                throw RetentionMessagingError(
                    .altTextTooLong,
                    "bullet point \(index + 1)'s alternative text has \(bullet.altText.utf16.count) characters; at most \(altTextLength)"
                )
            }
        }
    }

    /// Checks a PNG for its size class: the signature, the header chunk's width, height and colour type (no alpha
    /// channel), and no transparency chunk (`tRNS`) before the image data.
    ///
    /// - Returns: The image's header.
    /// - Throws: ``RetentionMessagingError/Code/invalidImage``.
    @discardableResult
    public static func check(png: some Collection<UInt8>, size: RetentionImageSize) throws(RetentionMessagingError) -> PNGHeader {
        guard png.count <= imageBytes else {
            throw RetentionMessagingError(.invalidImage, "the image is larger than \(imageBytes >> 20) MiB")
        }
        let header = try PNGHeader(Array(png.prefix(PNGHeader.scanLimit)))
        guard !header.hasAlpha else {
            throw RetentionMessagingError(
                .invalidImage,
                "the image has transparency (an alpha channel or a tRNS chunk); Apple takes opaque PNGs only"
            )
        }
        switch size {
        case .fullSize:
            guard header.width == fullSizeWidth, fullSizeHeights.contains(header.height) else {
                throw RetentionMessagingError(
                    .invalidImage,
                    """
                    a full-size image must be \(fullSizeWidth) px wide and \(fullSizeHeights.lowerBound) to \(fullSizeHeights.upperBound) px \
                    high; this one is \(header.width) × \(header.height)
                    """
                )
            }
        case .bulletPoint:
            guard header.width == bulletPointSide, header.height == bulletPointSide else {
                throw RetentionMessagingError(
                    .invalidImage,
                    "a bullet-point image must be \(bulletPointSide) × \(bulletPointSide) px; this one is \(header.width) × \(header.height)"
                )
            }
        }
        return header
    }

    /// Checks a locale path segment: subtags of 1 to 8 ASCII letters or digits joined by `-` or `_`, at most 35 bytes
    /// (`en-US`, `zh-Hant-TW`). Apple documents the parameter as "the locale" without a grammar.
    public static func locale(_ value: String) throws(RetentionMessagingError) -> String {
        let subtags = value.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "-" || $0 == "_" })
        guard value.utf8.count <= 35, !subtags.isEmpty,
            subtags.allSatisfy({ (1...8).contains($0.utf8.count) && $0.utf8.allSatisfy(Self.isAlphanumeric) }),
            subtags[0].utf8.allSatisfy({ !($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) })
        else {
            throw RetentionMessagingError(.invalidLocale, "the locale must be a language tag such as en-US")
        }
        return value
    }

    /// Checks a product identifier path segment: 1 to 255 ASCII letters, digits, `.`, `_` or `-`.
    public static func productId(_ value: String) throws(RetentionMessagingError) -> String {
        guard (1...255).contains(value.utf8.count),
            value.utf8.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw RetentionMessagingError(.invalidProductId, "the product identifier must be 1 to 255 letters, digits, dots, underscores or hyphens")
        }
        return value
    }

    /// Checks a real-time URL: `https://`, a host, at most 256 characters, no whitespace.
    public static func realtimeURL(_ value: String) throws(RetentionMessagingError) -> String {
        guard value.utf16.count <= realtimeURLLength, value.lowercased().hasPrefix("https://"),
            !value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 }),
            let components = URLComponents(string: value), let host = components.host, !host.isEmpty
        else {
            throw RetentionMessagingError(
                .invalidRealtimeURL,
                "the real-time URL must start with https://, name a host and be at most \(realtimeURLLength) characters"
            )
        }
        return value
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }
}
