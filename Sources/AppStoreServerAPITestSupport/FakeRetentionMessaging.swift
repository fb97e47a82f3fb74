import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore

/// A local stand-in for Apple's Retention Messaging API on loopback (`/inApps/v1/messaging/…`), built from Apple's
/// documented shapes and error codes: it checks the bearer token as ``FakeAppStore`` does, keeps a catalogue per
/// environment in ``state``, and enforces what Apple documents —
///
/// - images: a UUID identifier, `imageSize` `FULL_SIZE` (3840 × 160–2160 px) or `BULLET_POINT` (1024 × 1024 px), a
///   PNG without transparency (else `InvalidImageError` 4000161), at most 2,000 (`MaximumNumberOfImagesReachedError`
///   4030014), not idempotent (`ImageAlreadyExistsError` 4090000), not deletable while a message uses them
///   (`ImageInUseError` 4030019);
/// - messages: header ≤ 66 (4000162), body ≤ 144 (4000163), alt text ≤ 150 (4000175), ≤ 5 bullet points (4000218)
///   of ≤ 66 characters (4000219), `ABOVE_IMAGE` only with an image (4000224), images of the right size class
///   (4000216), at most 2,000 (4030016), not idempotent (`MessageAlreadyExistsError` 4090001);
/// - uploads are `PENDING` in Production until the test approves or rejects them, `APPROVED` at once in Sandbox;
/// - defaults need an approved message (4030017) and approved images (4030018), a valid locale (4000164);
/// - the real-time URL: `https://`, ≤ 256 characters (`BadRequestRealtimeUrlError` 4000215); in Production only
///   after a Sandbox performance test passed (`ForbiddenNoPassingTestError` 4030026);
/// - the performance test, on the Sandbox host only: scripted outcomes (``FakeRetentionMessagingState/scriptPerformanceTests(_:)``),
///   `PENDING` for a few polls, one run at a time (`ExistingPerformanceTestRunError` 4000213);
/// - rate limits: a 429 `RateLimitExceededError` (4290000) with `Retry-After` in UNIX milliseconds when
///   ``FakeRetentionMessagingState/rateLimitPerSecond`` is set, and any answer a test injects.
///
/// Base URLs are `http://localhost:<port>/production` and `…/sandbox`.
public struct FakeRetentionMessaging: Sendable {
    /// The In-App Purchase key the fake trusts.
    public let appKey: P256.Signing.PrivateKey
    /// The bundle ID tokens must carry.
    public let bundleIdentifier: String
    /// The catalogue and the scripts.
    public let state = FakeRetentionMessagingState()
    /// Tokens refused.
    public let ledger = FakeLedger()

    public init(appKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey(), bundleIdentifier: String = TestPayloads.bundleIdentifier) {
        self.appKey = appKey
        self.bundleIdentifier = bundleIdentifier
    }

    /// Runs the fake for the duration of `body`, which gets the port.
    public func run<T: Sendable>(_ body: @escaping @Sendable (Int) async throws -> T) async throws -> T {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(backing: appKey.publicKey), kid: JWKIdentifier(string: FakeAppStore.keyIdentifier))
        let router = Router()
        let state = self.state
        let ledger = self.ledger
        let bundleIdentifier = self.bundleIdentifier
        typealias Handler = @Sendable (Request, String, Parameters) async throws -> FakeResponse
        let route: @Sendable (String, @escaping Handler) -> @Sendable (Request, BasicRequestContext) async throws -> Response = { name, handler in
            { request, context in
                let environment = context.parameters.get("environment") ?? ""
                guard environment == "production" || environment == "sandbox" else { return Response(status: .notFound) }
                guard await FakeAppStore.checkedToken(request, keys: keys, bundleIdentifier: bundleIdentifier) != nil else {
                    await ledger.rejected()
                    return Response(status: .unauthorized)
                }
                let answer: FakeResponse
                if let injected = await state.admit(name, environment: environment) {
                    answer = injected
                } else {
                    answer = try await handler(request, environment, context.parameters)
                }
                var fields = HTTPFields()
                fields[.contentType] = "application/json"
                for (field, value) in answer.headers {
                    if let name = HTTPField.Name(field) { fields[name] = value }
                }
                return Response(status: answer.status, headers: fields, body: .init(byteBuffer: ByteBuffer(string: answer.body)))
            }
        }
        let prefix = "{environment}/inApps/v1/messaging"

        router.put(
            "\(prefix)/image/{id}",
            use: route("PUT image") { request, environment, parameters in
                guard let id = Self.uuid(parameters.get("id")) else { return .error(.badRequest, code: 4_000_000) }
                let size = request.uri.queryParameters.get("imageSize") ?? "FULL_SIZE"
                guard size == "FULL_SIZE" || size == "BULLET_POINT" else { return .error(.badRequest, code: 4_000_161) }
                let png = try await request.body.collect(upTo: 40 << 20)
                guard Self.acceptablePNG(Array(png.readableBytesView), size: size) else { return .error(.badRequest, code: 4_000_161) }
                return await state.uploadImage(id, size: size, environment: environment)
            }
        )
        router.delete(
            "\(prefix)/image/{id}",
            use: route("DELETE image") { _, environment, parameters in
                guard let id = Self.uuid(parameters.get("id")) else { return .error(.badRequest, code: 4_000_000) }
                return await state.deleteImage(id, environment: environment)
            }
        )
        router.get(
            "\(prefix)/image/list",
            use: route("GET image/list") { _, environment, _ in
                await state.imageList(environment: environment)
            }
        )
        router.put(
            "\(prefix)/message/{id}",
            use: route("PUT message") { request, environment, parameters in
                guard let id = Self.uuid(parameters.get("id")) else { return .error(.badRequest, code: 4_000_000) }
                let data = try await request.body.collect(upTo: 64 * 1024)
                guard let message = try? JSONDecoder().decode(UploadMessage.self, from: Data(data.readableBytesView)) else {
                    return .error(.badRequest, code: 4_000_000)
                }
                if let refused = message.refusal { return .error(.badRequest, code: refused) }
                let image = message.image.flatMap { Self.uuid($0.imageIdentifier) }
                let bullets = (message.bulletPoints ?? []).compactMap { Self.uuid($0.imageIdentifier) }
                return await state.uploadMessage(id, image: image, bullets: bullets, environment: environment)
            }
        )
        router.delete(
            "\(prefix)/message/{id}",
            use: route("DELETE message") { _, environment, parameters in
                guard let id = Self.uuid(parameters.get("id")) else { return .error(.badRequest, code: 4_000_000) }
                return await state.deleteMessage(id, environment: environment)
            }
        )
        router.get(
            "\(prefix)/message/list",
            use: route("GET message/list") { _, environment, _ in
                await state.messageList(environment: environment)
            }
        )
        router.put(
            "\(prefix)/default/{productId}/{locale}",
            use: route("PUT default") { request, environment, parameters in
                guard let key = Self.defaultKey(parameters) else { return .error(.badRequest, code: Self.defaultKeyError(parameters)) }
                let data = try await request.body.collect(upTo: 16 * 1024)
                guard let body = try? JSONDecoder().decode([String: String].self, from: Data(data.readableBytesView)),
                    let id = Self.uuid(body["messageIdentifier"])
                else { return .error(.badRequest, code: 4_000_000) }
                return await state.configureDefault(key, messageIdentifier: id, environment: environment)
            }
        )
        router.get(
            "\(prefix)/default/{productId}/{locale}",
            use: route("GET default") { _, environment, parameters in
                guard let key = Self.defaultKey(parameters) else { return .error(.badRequest, code: Self.defaultKeyError(parameters)) }
                return await state.getDefault(key, environment: environment)
            }
        )
        router.delete(
            "\(prefix)/default/{productId}/{locale}",
            use: route("DELETE default") { _, environment, parameters in
                guard let key = Self.defaultKey(parameters) else { return .error(.badRequest, code: Self.defaultKeyError(parameters)) }
                return await state.deleteDefault(key, environment: environment)
            }
        )
        router.put(
            "\(prefix)/realtime/url",
            use: route("PUT realtime/url") { request, environment, _ in
                let data = try await request.body.collect(upTo: 16 * 1024)
                guard let body = try? JSONDecoder().decode([String: String].self, from: Data(data.readableBytesView)),
                    let url = body["realtimeURL"], url.hasPrefix("https://"), url.unicodeScalars.count <= 256
                else { return .error(.badRequest, code: 4_000_215) }
                return await state.configureRealtimeURL(url, environment: environment)
            }
        )
        router.get(
            "\(prefix)/realtime/url",
            use: route("GET realtime/url") { _, environment, _ in
                await state.getRealtimeURL(environment: environment)
            }
        )
        router.delete(
            "\(prefix)/realtime/url",
            use: route("DELETE realtime/url") { _, environment, _ in
                await state.deleteRealtimeURL(environment: environment)
            }
        )
        router.post(
            "\(prefix)/performanceTest",
            use: route("POST performanceTest") { request, environment, _ in
                guard environment == "sandbox" else { return FakeResponse(status: .notFound) }  // Apple documents the Sandbox host only
                let data = try await request.body.collect(upTo: 16 * 1024)
                guard let body = try? JSONDecoder().decode([String: String].self, from: Data(data.readableBytesView)),
                    let transaction = body["originalTransactionId"]
                else { return .error(.badRequest, code: 4_000_211) }
                return await state.startPerformanceTest(originalTransactionId: transaction)
            }
        )
        router.get(
            "\(prefix)/performanceTest/result/{requestId}",
            use: route("GET performanceTest/result") { _, environment, parameters in
                guard environment == "sandbox" else { return FakeResponse(status: .notFound) }
                return await state.performanceTestResult(parameters.get("requestId") ?? "")
            }
        )

        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            guard let port = client.port else { throw FakeAppStoreError() }
            return try await body(port)
        }
    }

    // MARK: - Apple's checks

    static func uuid(_ value: String?) -> String? {
        guard let value, value.utf8.count == 36, let uuid = UUID(uuidString: value) else { return nil }
        return uuid.uuidString.lowercased()
    }

    static func defaultKey(_ parameters: Parameters) -> String? {
        guard let product = parameters.get("productId"), !product.isEmpty,
            product.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "-") }),
            let locale = parameters.get("locale"), isLocale(locale)
        else { return nil }
        return "\(product)/\(locale)"
    }

    static func defaultKeyError(_ parameters: Parameters) -> Int64 {
        isLocale(parameters.get("locale") ?? "") ? 4_000_023 : 4_000_164
    }

    /// A language tag: letters, then subtags of letters or digits.
    static func isLocale(_ value: String) -> Bool {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false).flatMap {
            $0.split(separator: "_", omittingEmptySubsequences: false)
        }
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    /// PNG signature, IHDR dimensions for the size class, no alpha colour type, no tRNS before IDAT (the fake's own
    /// reading, independent of the client's).
    static func acceptablePNG(_ bytes: [UInt8], size: String) -> Bool {
        guard bytes.count >= 33, bytes.prefix(8).elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
            bytes[12..<16].elementsEqual(Array("IHDR".utf8))
        else { return false }
        func word(_ at: Int) -> Int { bytes[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let width = word(16)
        let height = word(20)
        let colourType = bytes[25]
        guard colourType != 4, colourType != 6 else { return false }
        var at = 33
        while at + 8 <= bytes.count {
            let type = String(decoding: bytes[(at + 4)..<(at + 8)], as: UTF8.self)
            if type == "tRNS" { return false }
            if type == "IDAT" || type == "IEND" { break }
            at += 12 + word(at)
        }
        return size == "BULLET_POINT" ? (width == 1024 && height == 1024) : (width == 3840 && (160...2160).contains(height))
    }

    /// `UploadMessageRequestBody` as the fake reads it.
    struct UploadMessage: Decodable {
        struct Image: Decodable {
            var imageIdentifier: String
            var altText: String
        }
        struct Bullet: Decodable {
            var text: String
            var imageIdentifier: String
            var altText: String
        }
        var header: String
        var body: String
        var image: Image?
        var bulletPoints: [Bullet]?
        var headerPosition: String?

        /// Apple's error code for the first limit broken (lengths in Unicode scalars, as Apple's Python library counts).
        var refusal: Int64? {
            if header.unicodeScalars.count > 66 { return 4_000_162 }
            if body.unicodeScalars.count > 144 { return 4_000_163 }
            if let image, image.altText.unicodeScalars.count > 150 { return 4_000_175 }
            if let bulletPoints {
                if bulletPoints.count > 5 { return 4_000_218 }
                if bulletPoints.contains(where: { $0.text.unicodeScalars.count > 66 }) { return 4_000_219 }
                if bulletPoints.contains(where: { $0.altText.unicodeScalars.count > 150 }) { return 4_000_175 }
            }
            if headerPosition == "ABOVE_IMAGE", image == nil { return 4_000_224 }
            if let headerPosition, headerPosition != "ABOVE_IMAGE", headerPosition != "ABOVE_BODY" { return 4_000_000 }
            return nil
        }
    }
}
