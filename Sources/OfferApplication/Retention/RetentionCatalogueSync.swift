import AppStoreNotifications
import AppStoreServerAPI
import Foundation
import Logging
import OfferEligibility
import OfferModel
import OfferStore

/// Makes an app's Retention Messaging catalogue at Apple match the policy (`offer-signer retention sync`,
/// `POST /admin/retention/sync`), and reads its approval states (`retention status`, `GET /admin/retention/status`).
///
/// A sync checks the catalogue against Apple's limits first (``RetentionCatalogueCheck``: nothing is sent when one
/// is broken), lists what Apple has, uploads the images then the messages it does not have — under identifiers
/// derived from their content, so a second run finds everything and uploads nothing, and never meets Apple's
/// "already exists" (4090000, 4090001) — deletes what the policy no longer declares only when asked, configures each
/// product's default message per locale once its message is approved (Apple refuses an unapproved default, 4030017)
/// and only where it differs, and records every item with Apple's state in the store (``RetentionCatalogueRecord``).
/// Every call goes through ``RetentionMessagingClient``: Apple's rate limits and `Retry-After` are kept to.
public struct RetentionCatalogueSync: Sendable {
    /// One item of the catalogue, beside the policy.
    public struct Item: Sendable, Hashable, Codable {
        /// `image` or `message`.
        public var kind: String
        public var identifier: String
        /// The message's name or the image's file; empty for an item the policy does not declare.
        public var name: String
        /// `PENDING`, `APPROVED`, `REJECTED` (Apple's), or `NOT_SENT`.
        public var state: String
        /// Whether the policy declares it.
        public var inPolicy: Bool
    }

    /// What a sync or a status read found and did.
    public struct Report: Sendable, Hashable, Codable {
        /// The environment (`Production` or `Sandbox`).
        public var environment: String
        /// Identifiers uploaded by this run.
        public var uploaded: [String] = []
        /// Identifiers deleted by this run.
        public var deleted: [String] = []
        /// Items at Apple the policy does not declare, left there (pass `deleteDropped` to delete them).
        public var dropped: [String] = []
        /// `productId locale` of each default configured by this run.
        public var defaultsSet: [String] = []
        /// `productId locale` of each default whose message is not approved yet (configured by a later run).
        public var defaultsWaiting: [String] = []
        /// Every item, the policy's first, by kind and name.
        public var items: [Item] = []
    }

    let client: RetentionMessagingClient
    let store: (any RetentionCatalogueStore)?
    let logger: Logger
    let now: @Sendable () -> Date

    /// - Parameters:
    ///   - client: The app's client in one environment.
    ///   - store: Where the states are recorded; `nil` records nothing.
    ///   - logger: Where each upload, deletion and default is logged (identifiers only).
    ///   - now: The clock of the records.
    public init(
        client: RetentionMessagingClient,
        store: (any RetentionCatalogueStore)?,
        logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.store = store
        self.logger = logger
        self.now = now
    }

    /// The environment's name as records and reports spell it.
    var environment: String { client.environment == .sandbox ? "Sandbox" : "Production" }

    /// Makes Apple's catalogue of `app` match its policy.
    ///
    /// - Parameters:
    ///   - app: The app, with its ``OfferPolicy/App/retentionCatalogue``.
    ///   - deleteDropped: Delete the messages, then the images, Apple has and the policy no longer declares (messages
    ///     retention entries name by `messageIdentifier` are kept).
    ///   - report: Called with each line to show.
    /// - Throws: ``RetentionMessagingError``: `invalid_request` naming the first broken limit (nothing sent), or the
    ///   failed call's error (what was done before it is recorded on the next run).
    public func sync(
        _ app: OfferPolicy.App,
        deleteDropped: Bool = false,
        report: @Sendable (String) -> Void = { _ in }
    ) async throws(RetentionMessagingError) -> Report {
        let problems = RetentionCatalogueCheck.problems(in: app)
        if let first = problems.first {
            throw RetentionMessagingError(
                .invalidRequest,
                """
                the policy's retention catalogue breaks \(problems.count) of Apple's limits, nothing was sent; first: \(first) (offer-signer \
                policy check lists them)
                """
            )
        }
        let catalogue = app.retentionCatalogue
        var result = Report(environment: environment)
        let images = Dictionary(
            try await client.images().compactMap { item in item.imageIdentifier.map { ($0.lowercased(), item) } },
            uniquingKeysWith: { a, _ in a }
        )
        let messages = Dictionary(
            try await client.messages().compactMap { item in item.messageIdentifier.map { ($0.lowercased(), item) } },
            uniquingKeysWith: { a, _ in a }
        )
        for image in catalogue.images where images[image.identifier] == nil {
            let bytes = try RetentionCatalogueCheck.read(image)
            try await upload { () async throws(RetentionMessagingError) in
                try await client.uploadImage(identifier: image.identifier, png: bytes, size: RetentionImageSize(rawValue: image.size) ?? .fullSize)
            }
            result.uploaded.append(image.identifier)
            logger.notice("retention image uploaded", metadata: ["identifier": "\(image.identifier)", "environment": "\(environment)"])
            report("uploaded image \(image.identifier) (\(URL(fileURLWithPath: image.file).lastPathComponent))")
        }
        let withOffers = Set(
            app.products.flatMap(\.retention).filter { if case .message = $0.answer { false } else { true } }.compactMap(\.messageName)
        )
        for message in catalogue.messages where messages[message.identifier] == nil {
            try await upload { () async throws(RetentionMessagingError) in
                try await client.uploadMessage(
                    identifier: message.identifier,
                    message: RetentionCatalogueCheck.message(message),
                    textOnly: !withOffers.contains(message.name)
                )
            }
            result.uploaded.append(message.identifier)
            logger.notice("retention message uploaded", metadata: ["identifier": "\(message.identifier)", "environment": "\(environment)"])
            report("uploaded message \(message.name) as \(message.identifier)")
        }
        let declaredMessages = Set(catalogue.messages.map(\.identifier) + app.products.flatMap(\.retention).map(\.messageIdentifier))
        let declaredImages = Set(catalogue.images.map(\.identifier))
        let droppedMessages = messages.keys.filter { !declaredMessages.contains($0) }.sorted()
        let droppedImages = images.keys.filter { !declaredImages.contains($0) }.sorted()
        if deleteDropped {
            for identifier in droppedMessages {
                try await client.deleteMessage(identifier: identifier)
                result.deleted.append(identifier)
                report("deleted message \(identifier)")
            }
            for identifier in droppedImages {
                try await client.deleteImage(identifier: identifier)
                result.deleted.append(identifier)
                report("deleted image \(identifier)")
            }
        } else {
            result.dropped = droppedMessages + droppedImages
            if !result.dropped.isEmpty {
                report("\(result.dropped.count) items at Apple the policy does not declare, left there (--delete-dropped deletes them)")
            }
        }
        var recorded = try await read(app, previous: result)
        let states = Dictionary(recorded.items.map { ($0.identifier, $0.state) }, uniquingKeysWith: { a, _ in a })
        for entry in catalogue.defaults {
            let key = "\(entry.productIdentifier) \(entry.locale)"
            let message = catalogue.message(named: entry.messageName)
            let approved =
                ([entry.messageIdentifier] + (message?.imageIdentifier.map { [$0] } ?? []) + (message?.bulletPoints.map(\.imageIdentifier) ?? []))
                .allSatisfy { states[$0] == "APPROVED" }
            guard approved else {
                recorded.defaultsWaiting.append(key)
                report("default \(key): message \(entry.messageName) is not approved yet; run sync again once it is")
                continue
            }
            guard try await client.defaultMessage(productId: entry.productIdentifier, locale: entry.locale) != entry.messageIdentifier else {
                continue
            }
            try await client.configureDefaultMessage(
                productId: entry.productIdentifier,
                locale: entry.locale,
                messageIdentifier: entry.messageIdentifier
            )
            recorded.defaultsSet.append(key)
            logger.notice(
                "retention default message configured",
                metadata: [
                    "productId": "\(entry.productIdentifier)", "locale": "\(entry.locale)", "identifier": "\(entry.messageIdentifier)",
                ]
            )
            report("default \(key): \(entry.messageName)")
        }
        return recorded
    }

    /// Reads Apple's states of the catalogue, records them and returns them beside the policy.
    public func status(_ app: OfferPolicy.App) async throws(RetentionMessagingError) -> Report {
        try await read(app, previous: Report(environment: environment))
    }

    /// Lists Apple's images and messages, records the states in the store and returns every item.
    private func read(_ app: OfferPolicy.App, previous: Report) async throws(RetentionMessagingError) -> Report {
        var result = previous
        let catalogue = app.retentionCatalogue
        let images = try await client.images()
        let messages = try await client.messages()
        var items: [Item] = []
        var seen: Set<String> = []
        func state(_ value: RetentionApprovalState?) -> String { value?.rawValue ?? "PENDING" }
        for message in catalogue.messages where seen.insert(message.identifier).inserted {
            let found = messages.first { $0.messageIdentifier?.lowercased() == message.identifier }
            items.append(
                Item(
                    kind: "message",
                    identifier: message.identifier,
                    name: message.name,
                    state: found.map { state($0.messageState) } ?? "NOT_SENT",
                    inPolicy: true
                )
            )
        }
        for image in catalogue.images where seen.insert(image.identifier).inserted {
            let found = images.first { $0.imageIdentifier?.lowercased() == image.identifier }
            items.append(
                Item(
                    kind: "image",
                    identifier: image.identifier,
                    name: URL(fileURLWithPath: image.file).lastPathComponent,
                    state: found.map { state($0.imageState) } ?? "NOT_SENT",
                    inPolicy: true
                )
            )
        }
        for message in messages {
            guard let identifier = message.messageIdentifier?.lowercased(), seen.insert(identifier).inserted else { continue }
            items.append(Item(kind: "message", identifier: identifier, name: "", state: state(message.messageState), inPolicy: false))
        }
        for image in images {
            guard let identifier = image.imageIdentifier?.lowercased(), seen.insert(identifier).inserted else { continue }
            items.append(Item(kind: "image", identifier: identifier, name: "", state: state(image.imageState), inPolicy: false))
        }
        result.items = items
        if let store {
            let now = now()
            let uploaded = Set(previous.uploaded)
            do {
                let before = Dictionary(
                    try await store.retentionCatalogue(bundleIdentifier: app.bundleIdentifier, environment: environment).map { ($0.identifier, $0) },
                    uniquingKeysWith: { a, _ in a }
                )
                let records = items.map { item in
                    RetentionCatalogueRecord(
                        kind: item.kind,
                        identifier: item.identifier,
                        name: item.name,
                        state: item.state,
                        sentAt: uploaded.contains(item.identifier) ? now : before[item.identifier]?.sentAt,
                        checkedAt: now
                    )
                }
                try await store.replaceRetentionCatalogue(bundleIdentifier: app.bundleIdentifier, environment: environment, with: records)
            } catch {
                logger.error("the retention catalogue's states could not be recorded", metadata: ["error": "\(type(of: error))"])
                throw RetentionMessagingError(
                    .invalidRequest,
                    "Apple's states were read but the store could not record them; check the store and run again"
                )
            }
        }
        return result
    }

    /// Runs an upload, taking Apple's "already exists" as done: the identifier is derived from the content, so the
    /// item Apple has is this one (an earlier run's upload whose answer was lost).
    private func upload(_ call: () async throws(RetentionMessagingError) -> Void) async throws(RetentionMessagingError) {
        do {
            try await call()
        } catch  where error.code == .alreadyExists {
            logger.info(
                "the App Store already has this item: an earlier upload's answer was lost",
                metadata: ["code": "\(error.appleErrorCode ?? 0)"]
            )
        }
    }
}
