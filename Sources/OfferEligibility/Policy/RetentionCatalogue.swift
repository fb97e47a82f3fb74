import Crypto
import Foundation
import OfferSigning

extension OfferPolicy {
    /// The messages and images an app's retention entries use, as the policy declares them (`retentionMessages:` on
    /// the app, `retentionDefaults:` on each product), with the identifiers they are uploaded under.
    ///
    /// Identifiers are derived from the content (``derivedIdentifier(_:)``): an image's from its PNG bytes and size
    /// class, a message's from its text, header position, images and alternative texts. The same content is always
    /// the same identifier, so a sync that runs again finds everything uploaded and sends nothing, and a change makes
    /// a new item rather than colliding with the old one (Apple's uploads are not idempotent). Apple's limits are
    /// checked by `policy check` and before a sync (`RetentionCatalogueCheck` in OfferApplication); here only the
    /// shape is read. See docs/retention.md.
    public struct RetentionCatalogue: Sendable, Hashable {
        /// The declared messages, in order.
        public var messages: [Message] = []
        /// The images the messages use, each once (an image is the same when its bytes and size class are).
        public var images: [Image] = []
        /// The default message of each product and locale (`retentionDefaults:`), in the policy's order.
        public var defaults: [Default] = []

        /// Whether nothing is declared.
        public var isEmpty: Bool { messages.isEmpty && images.isEmpty && defaults.isEmpty }

        /// The message named `name`.
        public func message(named name: String) -> Message? { messages.first { $0.name == name } }

        public init() {}

        /// An image file beside the policy.
        public struct Image: Sendable, Hashable {
            /// The identifier it is uploaded under (a lower-case UUID derived from its bytes and size class).
            public var identifier: String
            /// The file, as resolved from the policy's folder.
            public var file: String
            /// `FULL_SIZE` or `BULLET_POINT`.
            public var size: String
            /// The SHA-256 of the file as read, in hex (a sync refuses a file changed since).
            public var sha256: String
            /// Where the policy first names it.
            public var location: String
        }

        /// One declared message.
        public struct Message: Sendable, Hashable {
            /// Its name in the policy (what entries and defaults name).
            public var name: String
            /// The identifier it is uploaded under (a lower-case UUID derived from its content).
            public var identifier: String
            /// The locale it is written for (`locale:`), if declared.
            public var locale: String?
            public var header: String
            public var body: String
            /// `ABOVE_BODY` or `ABOVE_IMAGE`, if declared.
            public var headerPosition: String?
            /// The image above the body and its alternative text.
            public var image: (identifier: String, altText: String)? {
                get { imageIdentifier.map { ($0, imageAltText ?? "") } }
                set { (imageIdentifier, imageAltText) = (newValue?.identifier, newValue?.altText) }
            }
            public var imageIdentifier: String?
            public var imageAltText: String?
            /// The bullet points.
            public var bulletPoints: [BulletPoint]
            /// Where it is declared.
            public var location: String
        }

        /// One bullet point of a message.
        public struct BulletPoint: Sendable, Hashable {
            public var text: String
            public var imageIdentifier: String
            public var altText: String
        }

        /// A product's default message for a locale: the message the App Store shows when the real-time URL does
        /// not answer, and the condition for the App Store to call it at all.
        public struct Default: Sendable, Hashable {
            public var productIdentifier: String
            public var locale: String
            public var messageName: String
            public var messageIdentifier: String
            public var location: String
        }
    }

    /// The largest image file read (Apple documents none; a full-size PNG is a few MiB).
    public static let maximumRetentionImageBytes = 32 << 20

    /// A lower-case UUID (version 8, RFC 9562: custom) from the SHA-256 of `content`: what a catalogue item is
    /// uploaded under.
    public static func derivedIdentifier(_ content: some DataProtocol) -> String {
        var bytes = Array(SHA256.hash(data: content).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            )
        )
        return uuid.uuidString.lowercased()
    }

    /// Reads an app's `retentionMessages:` and its products' `retentionDefaults:`.
    ///
    /// - Parameters:
    ///   - node: The app's `retentionMessages:` list, if any.
    ///   - productNodes: The app's products, for their `retentionDefaults:` (a map of locale to message name).
    ///   - directory: The policy file's folder, where image files are found; `nil` when the policy is not a file
    ///     (then a message with an image cannot be read).
    static func retentionCatalogue(
        _ node: PolicyNode?,
        productNodes: [PolicyNode],
        directory: String?
    ) throws(PolicyError) -> RetentionCatalogue {
        var catalogue = RetentionCatalogue()
        var images: [String: RetentionCatalogue.Image] = [:]
        var names: Set<String> = []
        func image(_ node: PolicyNode, size: String) throws(PolicyError) -> String {
            let file = try node.string()
            guard !file.isEmpty, file.utf8.count <= 1024, !file.contains("\0") else {
                throw PolicyError(.invalidPolicy, "\(node.location): an image is the path of a PNG file beside the policy")
            }
            guard let directory else {
                throw PolicyError(
                    .invalidPolicy,
                    "\(node.location): an image file can only be read when the policy is read from its file (images are found beside it)"
                )
            }
            let path = file.hasPrefix("/") ? file : URL(fileURLWithPath: directory).appendingPathComponent(file).path
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw PolicyError(.invalidPolicy, "\(node.location): cannot read the image file \(file)")
            }
            defer { try? handle.close() }
            let data = (try? handle.read(upToCount: maximumRetentionImageBytes + 1)) ?? Data()
            guard data.count <= maximumRetentionImageBytes else {
                throw PolicyError(.invalidPolicy, "\(node.location): the image file \(file) is larger than \(maximumRetentionImageBytes >> 20) MiB")
            }
            let digest = SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
            let identifier = derivedIdentifier(Data("retention-image\n\(size)\n\(digest)".utf8))
            if images[identifier] == nil {
                let entry = RetentionCatalogue.Image(identifier: identifier, file: path, size: size, sha256: digest, location: node.location)
                images[identifier] = entry
                catalogue.images.append(entry)
            }
            return identifier
        }
        for messageNode in try (node?.list() ?? []) {
            try messageNode.requireOnlyKeys(["name", "locale", "header", "body", "headerPosition", "image", "altText", "bulletPoints", "description"])
            let name = try required(messageNode, "name", maximumLength: 64)
            guard names.insert(name).inserted else { throw PolicyError(.invalidPolicy, "\(messageNode.location): message \(name) is declared twice") }
            let headerPosition = try optional(messageNode, "headerPosition", maximumLength: 16)
            if let headerPosition, headerPosition != "ABOVE_BODY", headerPosition != "ABOVE_IMAGE" {
                throw PolicyError(
                    .invalidPolicy,
                    "\(messageNode.location): headerPosition must be ABOVE_BODY or ABOVE_IMAGE, not '\(headerPosition)'"
                )
            }
            var message = RetentionCatalogue.Message(
                name: name,
                identifier: "",
                locale: try optional(messageNode, "locale", maximumLength: 35),
                header: try text(messageNode, "header"),
                body: try text(messageNode, "body"),
                headerPosition: headerPosition,
                bulletPoints: [],
                location: messageNode.location
            )
            if let imageNode = messageNode["image"] {
                message.image = (try image(imageNode, size: "FULL_SIZE"), try text(messageNode, "altText"))
            } else if messageNode["altText"] != nil {
                throw PolicyError(.invalidPolicy, "\(messageNode.location): altText describes the message's image; add image: or remove altText")
            }
            for bulletNode in try (messageNode["bulletPoints"]?.list() ?? []) {
                try bulletNode.requireOnlyKeys(["text", "image", "altText"])
                guard let imageNode = bulletNode["image"] else {
                    throw PolicyError(.invalidPolicy, "\(bulletNode.location): a bullet point needs its image (a 1024 × 1024 PNG file)")
                }
                message.bulletPoints.append(
                    RetentionCatalogue.BulletPoint(
                        text: try text(bulletNode, "text"),
                        imageIdentifier: try image(imageNode, size: "BULLET_POINT"),
                        altText: try text(bulletNode, "altText")
                    )
                )
            }
            message.identifier = derivedIdentifier(message.canonicalContent)
            catalogue.messages.append(message)
        }
        for productNode in productNodes {
            guard let defaultsNode = productNode["retentionDefaults"] else { continue }
            let productIdentifier = try required(productNode, "productIdentifier")
            for (locale, messageNode) in try defaultsNode.map() {
                let messageName = try messageNode.string()
                guard let message = catalogue.message(named: messageName) else {
                    throw PolicyError(
                        .invalidPolicy,
                        "\(messageNode.location): message \(messageName.prefix(64)) is not one of the app's retentionMessages"
                    )
                }
                catalogue.defaults.append(
                    RetentionCatalogue.Default(
                        productIdentifier: productIdentifier,
                        locale: locale,
                        messageName: messageName,
                        messageIdentifier: message.identifier,
                        location: messageNode.location
                    )
                )
            }
        }
        return catalogue
    }

    /// A message's text field: required, any printable text (its length is checked against Apple's limits by
    /// `policy check`; here only a bound that keeps a hostile file small).
    private static func text(_ node: PolicyNode, _ key: String) throws(PolicyError) -> String {
        guard let value = node[key] else { throw PolicyError(.invalidPolicy, "\(node.location): '\(key)' is required") }
        let text = try value.string()
        guard text.utf8.count <= 4096, !text.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\n" }) else {
            throw PolicyError(.invalidPolicy, "\(value.location): '\(key)' must be text without control characters")
        }
        return text
    }
}

extension OfferPolicy.RetentionCatalogue.Message {
    /// What the identifier is derived from: every field Apple is sent, in one canonical form.
    var canonicalContent: Data {
        struct Canonical: Encodable {
            var header, body: String
            var headerPosition: String?
            var imageIdentifier, imageAltText: String?
            var bulletPoints: [[String]]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let canonical = Canonical(
            header: header,
            body: body,
            headerPosition: headerPosition,
            imageIdentifier: imageIdentifier,
            imageAltText: imageAltText,
            bulletPoints: bulletPoints.map { [$0.text, $0.imageIdentifier, $0.altText] }
        )
        return Data("retention-message\n".utf8) + ((try? encoder.encode(canonical)) ?? Data())
    }
}
