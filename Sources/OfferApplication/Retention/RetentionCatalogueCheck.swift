import AppStoreServerAPI
import Crypto
import Foundation
import OfferEligibility
import OfferErrors
import OfferSigning

/// Checks a policy's retention catalogue (``OfferPolicy/RetentionCatalogue``) against every limit of Apple's
/// Retention Messaging API before anything is sent (``RetentionMessagingLimits``): header ≤ 66 characters, body ≤ 144,
/// alternative texts ≤ 150, ≤ 5 bullet points of ≤ 66 characters, `ABOVE_IMAGE` only with an image, only a text
/// message (an entry that answers with a message, or a default) carries an image or bullet points, images PNG
/// without transparency of their size class (full size 3840 px wide and 160–2160 px high, bullet points 1024 × 1024 px),
/// at most 2,000 images and 2,000 messages an app, default messages' locales and products as Apple takes them.
///
/// `offer-signer policy check` prints every problem; ``RetentionCatalogueSync`` refuses to send a catalogue with one.
public enum RetentionCatalogueCheck {
    /// One broken limit.
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// The app.
        public var bundleIdentifier: String
        /// Where in the policy.
        public var location: String
        /// The limit, in Apple's terms (``RetentionMessagingError``'s code: `header_too_long`, `invalid_image`, …).
        public var code: String
        /// What is wrong, in plain words.
        public var message: String

        public var description: String { "\(location): \(message) [\(code)]" }
    }

    /// Every problem of every app's catalogue, in the policy's order (empty: the catalogue can be sent).
    public static func problems(in policy: OfferPolicy) -> [Problem] {
        policy.apps.flatMap { problems(in: $0) }
    }

    /// Every problem of one app's catalogue.
    public static func problems(in app: OfferPolicy.App) -> [Problem] {
        let catalogue = app.retentionCatalogue
        var problems: [Problem] = []
        func note(_ location: String, _ error: RetentionMessagingError) {
            problems.append(Problem(bundleIdentifier: app.bundleIdentifier, location: location, code: error.code.rawValue, message: error.message))
        }
        if catalogue.messages.count > RetentionMessagingLimits.messagesPerApp {
            note(
                catalogue.messages[RetentionMessagingLimits.messagesPerApp].location,
                RetentionMessagingError(
                    .limitReached,
                    """
                    \(app.bundleIdentifier) declares \(catalogue.messages.count) retention messages; Apple keeps at most \
                    \(RetentionMessagingLimits.messagesPerApp) an app
                    """
                )
            )
        }
        if catalogue.images.count > RetentionMessagingLimits.imagesPerApp {
            note(
                catalogue.images[RetentionMessagingLimits.imagesPerApp].location,
                RetentionMessagingError(
                    .limitReached,
                    """
                    \(app.bundleIdentifier) uses \(catalogue.images.count) retention images; Apple keeps at most \
                    \(RetentionMessagingLimits.imagesPerApp) an app
                    """
                )
            )
        }
        for image in catalogue.images {
            do {
                try RetentionMessagingLimits.check(png: try read(image), size: RetentionImageSize(rawValue: image.size) ?? .fullSize)
            } catch {
                note(image.location, error)
            }
        }
        // A message shown with a promotional offer or another plan may carry no image (Apple: only text messages).
        var withOffers: Set<String> = []
        for product in app.products {
            for entry in product.retention {
                guard let name = entry.messageName else { continue }
                if case .message = entry.answer { continue }
                withOffers.insert(name)
            }
        }
        for message in catalogue.messages {
            do {
                try RetentionMessagingLimits.check(Self.message(message), textOnly: !withOffers.contains(message.name))
            } catch {
                note(message.location, error)
            }
            if let locale = message.locale {
                do { _ = try RetentionMessagingLimits.locale(locale) } catch { note(message.location, error) }
            }
        }
        for entry in catalogue.defaults {
            do {
                _ = try RetentionMessagingLimits.productId(entry.productIdentifier)
                _ = try RetentionMessagingLimits.locale(entry.locale)
            } catch {
                note(entry.location, error)
            }
            if let message = catalogue.message(named: entry.messageName), let written = message.locale, written != entry.locale {
                note(
                    entry.location,
                    RetentionMessagingError(
                        .invalidLocale,
                        "message \(entry.messageName) is written for \(written), not \(entry.locale); declare one in that locale"
                    )
                )
            }
        }
        return problems
    }

    /// The message as it is uploaded.
    public static func message(_ message: OfferPolicy.RetentionCatalogue.Message) -> AppStoreServerAPI.RetentionMessage {
        AppStoreServerAPI.RetentionMessage(
            header: message.header,
            body: message.body,
            image: message.imageIdentifier.map { RetentionMessageImage(imageIdentifier: $0, altText: message.imageAltText ?? "") },
            bulletPoints: message.bulletPoints.isEmpty
                ? nil
                : message.bulletPoints.map {
                    RetentionBulletPoint(text: $0.text, imageIdentifier: $0.imageIdentifier, altText: $0.altText)
                },
            headerPosition: message.headerPosition.flatMap(RetentionHeaderPosition.init(rawValue:))
        )
    }

    /// The image's file, as it was when the policy was read (its SHA-256 must still match).
    ///
    /// - Throws: ``RetentionMessagingError/Code/invalidImage`` when the file cannot be read or has changed since.
    public static func read(_ image: OfferPolicy.RetentionCatalogue.Image) throws(RetentionMessagingError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: image.file) else {
            throw RetentionMessagingError(.invalidImage, "cannot read the image file \(image.file)")
        }
        let data = (try? handle.read(upToCount: OfferPolicy.maximumRetentionImageBytes + 1)) ?? Data()
        try? handle.close()
        let digest = SHA256.hash(data: data).withUnsafeBytes { $0.hexString() }
        guard digest == image.sha256 else {
            throw RetentionMessagingError(.invalidImage, "the image file \(image.file) changed since the policy was read; read the policy again")
        }
        return Array(data)
    }
}
