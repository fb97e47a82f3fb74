import AppStoreNotifications
import AppStoreServerAPI
import AppStoreServerAPITestSupport
import AppStoreTestSupport
import Crypto
import Foundation
import HTTPTypes
import Logging
import Testing

/// The Retention Messaging client against a stand-in of Apple's API on loopback: every limit checked before sending,
/// every documented error code mapped, 429s waited out, uploads not repeated, approvals, and the performance test.
@Suite struct RetentionMessagingClientTests {
    let appKey = P256.Signing.PrivateKey()

    // MARK: - Limits, before anything is sent

    static let image = "6f1b1c4e-2d3a-4f5b-9c8d-7e6f5a4b3c2d"
    static let bulletImage = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

    static let refusedMessages: [(String, RetentionMessage, Bool, RetentionMessagingError.Code)] = [
        ("header of 67", RetentionMessage(header: String(repeating: "h", count: 67), body: "b"), true, .headerTooLong),
        ("body of 145", RetentionMessage(header: "h", body: String(repeating: "b", count: 145)), true, .bodyTooLong),
        ("empty header", RetentionMessage(header: "", body: "b"), true, .missingText),
        ("empty body", RetentionMessage(header: "h", body: ""), true, .missingText),
        (
            "alt text of 151",
            RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: image, altText: String(repeating: "a", count: 151))), true,
            .altTextTooLong
        ),
        (
            "6 bullet points",
            RetentionMessage(
                header: "h",
                body: "b",
                bulletPoints: Array(repeating: .init(text: "t", imageIdentifier: bulletImage, altText: "a"), count: 6)
            ), true, .tooManyBulletPoints
        ),
        (
            "bullet text of 67",
            RetentionMessage(
                header: "h",
                body: "b",
                bulletPoints: [.init(text: String(repeating: "t", count: 67), imageIdentifier: bulletImage, altText: "a")]
            ), true, .bulletPointTextTooLong
        ),
        (
            "bullet alt text of 151",
            RetentionMessage(
                header: "h",
                body: "b",
                bulletPoints: [.init(text: "t", imageIdentifier: bulletImage, altText: String(repeating: "a", count: 151))]
            ), true, .altTextTooLong
        ),
        ("header above no image", RetentionMessage(header: "h", body: "b", headerPosition: .aboveImage), true, .aboveImageRequiresImage),
        (
            "image on an offer's message", RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: image, altText: "a")), false,
            .imageNotAllowed
        ),
        (
            "bullets on an offer's message",
            RetentionMessage(header: "h", body: "b", bulletPoints: [.init(text: "t", imageIdentifier: bulletImage, altText: "a")]), false,
            .imageNotAllowed
        ),
        (
            "image identifier not a UUID", RetentionMessage(header: "h", body: "b", image: .init(imageIdentifier: "image-1", altText: "a")), true,
            .invalidIdentifier
        ),
        ("header of 66 emoji halves", RetentionMessage(header: String(repeating: "😀", count: 34), body: "b"), true, .headerTooLong),
    ]

    @Test(arguments: refusedMessages.indices)
    func messageBreakingALimitIsRefusedBeforeSending(case index: Int) async throws {
        let (_, message, textOnly, expected) = Self.refusedMessages[index]
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            let error = await Self.error { try await client.uploadMessage(identifier: UUID().uuidString, message: message, textOnly: textOnly) }
            #expect(error?.code == expected)
            #expect(error?.appleErrorCode == nil)
            #expect(await fake.state.count("PUT message", in: "sandbox") == 0)
        }
    }

    @Test func messagesAtEveryLimitAreAccepted() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            try await client.uploadImage(identifier: Self.image, png: Self.png(width: 3840, height: 2160), size: .fullSize)
            try await client.uploadImage(identifier: Self.bulletImage, png: Self.png(width: 1024, height: 1024), size: .bulletPoint)
            let message = RetentionMessage(
                header: String(repeating: "h", count: 66),
                body: String(repeating: "b", count: 144),
                image: .init(imageIdentifier: Self.image.uppercased(), altText: String(repeating: "a", count: 150)),
                bulletPoints: Array(
                    repeating: .init(
                        text: String(repeating: "t", count: 66),
                        imageIdentifier: Self.bulletImage,
                        altText: String(repeating: "a", count: 150)
                    ),
                    count: 5
                ),
                headerPosition: .aboveImage
            )
            let id = UUID().uuidString
            try await client.uploadMessage(identifier: id, message: message)
            try await client.uploadMessage(
                identifier: UUID().uuidString,
                message: RetentionMessage(header: "Stay", body: "Half price for 3 months"),
                textOnly: false
            )
            let listed = try await client.messages()
            #expect(listed.count == 2)
            #expect(listed.contains { $0.messageIdentifier == id.lowercased() && $0.messageState == .approved })
        }
    }

    static let refusedImages: [(String, [UInt8], RetentionImageSize)] = [
        ("not a PNG", Array("GIF89a, not a PNG at all, long enough to be read".utf8), .fullSize),
        ("truncated", Array(png(width: 3840, height: 400).prefix(20)), .fullSize),
        ("RGBA", png(width: 3840, height: 400, colourType: 6), .fullSize),
        ("grey + alpha", png(width: 3840, height: 400, colourType: 4), .fullSize),
        ("tRNS chunk", png(width: 3840, height: 400, colourType: 3, transparencyChunk: true), .fullSize),
        ("3839 wide", png(width: 3839, height: 400), .fullSize),
        ("159 high", png(width: 3840, height: 159), .fullSize),
        ("2161 high", png(width: 3840, height: 2161), .fullSize),
        ("bullet 1024 × 1023", png(width: 1024, height: 1023), .bulletPoint),
        ("full size as a bullet", png(width: 3840, height: 1024), .bulletPoint),
        ("bullet as full size", png(width: 1024, height: 1024), .fullSize),
    ]

    @Test(arguments: refusedImages.indices)
    func imageApplWouldRefuseIsRefusedBeforeSending(case index: Int) async throws {
        let (_, bytes, size) = Self.refusedImages[index]
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            let error = await Self.error { try await client.uploadImage(identifier: UUID().uuidString, png: bytes, size: size) }
            #expect(error?.code == .invalidImage)
            #expect(await fake.state.count("PUT image", in: "sandbox") == 0)
        }
    }

    @Test func imagesAtTheLimitsAreAccepted() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            for (bytes, size) in [
                (Self.png(width: 3840, height: 160), RetentionImageSize.fullSize), (Self.png(width: 3840, height: 2160), .fullSize),
                (Self.png(width: 3840, height: 800, colourType: 3), .fullSize), (Self.png(width: 1024, height: 1024, colourType: 0), .bulletPoint),
            ] {
                try await client.uploadImage(identifier: UUID().uuidString, png: bytes, size: size)
            }
            let images = try await client.images()
            #expect(images.count == 4)
            #expect(images.allSatisfy { $0.imageState == .approved })
            #expect(images.filter { $0.imageSize == "BULLET_POINT" }.count == 1)
        }
    }

    @Test func otherValuesAreCheckedBeforeSending() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            #expect(
                await Self.error { try await client.configureRealtimeURL("http://offers.example.com/v1/retention/appstore") }?.code
                    == .invalidRealtimeURL
            )
            let long = "https://offers.example.com/" + String(repeating: "a", count: 230)
            #expect(long.count == 257)
            #expect(await Self.error { try await client.configureRealtimeURL(long) }?.code == .invalidRealtimeURL)
            try await client.configureRealtimeURL(String(long.dropLast()))
            #expect(try await client.realtimeURL() == String(long.dropLast()))
            let message = UUID().uuidString
            #expect(
                await Self.error {
                    try await client.configureDefaultMessage(productId: "com.example.monthly", locale: "en US", messageIdentifier: message)
                }?.code == .invalidLocale
            )
            #expect(
                await Self.error { try await client.configureDefaultMessage(productId: "com/example", locale: "en-US", messageIdentifier: message) }?
                    .code == .invalidProductId
            )
            #expect(
                await Self.error {
                    try await client.configureDefaultMessage(productId: "com.example.monthly", locale: "en-US", messageIdentifier: "nope")
                }?.code == .invalidIdentifier
            )
            #expect(await Self.error { try await client.deleteImage(identifier: "../message/list") }?.code == .invalidIdentifier)
            #expect(
                await Self.error { _ = try await client.startPerformanceTest(originalTransactionId: "12a") }?.code == .invalidPerformanceTestRequest
            )
            #expect(await Self.error { _ = try await client.performanceTestResult(requestId: "a/b") }?.code == .invalidRequest)
            #expect(await fake.state.count("PUT default", in: "sandbox") == 0)
            #expect(await fake.state.count("PUT realtime/url", in: "sandbox") == 1)
        }
    }

    // MARK: - Apple's answers

    static let appleErrors: [(HTTPResponse.Status, Int64?, RetentionMessagingError.Code)] = [
        (.badRequest, 4_000_161, .invalidImage), (.badRequest, 4_000_162, .headerTooLong), (.badRequest, 4_000_163, .bodyTooLong),
        (.badRequest, 4_000_164, .invalidLocale), (.badRequest, 4_000_175, .altTextTooLong), (.badRequest, 4_000_023, .invalidProductId),
        (.badRequest, 4_000_211, .invalidPerformanceTestRequest), (.badRequest, 4_000_212, .invalidRequest),
        (.badRequest, 4_000_213, .performanceTestInProgress), (.badRequest, 4_000_215, .invalidRealtimeURL),
        (.badRequest, 4_000_216, .invalidImageSize), (.badRequest, 4_000_218, .tooManyBulletPoints),
        (.badRequest, 4_000_219, .bulletPointTextTooLong), (.badRequest, 4_000_224, .aboveImageRequiresImage),
        (.badRequest, 4_000_000, .invalidRequest), (.badRequest, nil, .invalidRequest),
        (.forbidden, 4_030_014, .limitReached), (.forbidden, 4_030_016, .limitReached), (.forbidden, 4_030_017, .notApproved),
        (.forbidden, 4_030_018, .notApproved), (.forbidden, 4_030_019, .imageInUse), (.forbidden, 4_030_026, .noPassingTest),
        (.notFound, 4_040_014, .notFound), (.notFound, 4_040_015, .notFound), (.notFound, 4_040_018, .notFound),
        (.notFound, 4_040_020, .notFound), (.notFound, 4_040_021, .notFound), (.notFound, nil, .notFound),
        (.conflict, 4_090_000, .alreadyExists), (.conflict, 4_090_001, .alreadyExists),
    ]

    @Test(arguments: appleErrors.indices)
    func everyDocumentedErrorCodeHasItsOwnCode(case index: Int) async throws {
        let (status, appleCode, expected) = Self.appleErrors[index]
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            let answer = appleCode.map { FakeResponse.error(status, code: $0) } ?? FakeResponse(status: status)
            await fake.state.inject("GET image/list", [answer])
            let error = await Self.error { _ = try await client.images() }
            #expect(error?.code == expected)
            #expect(error?.appleErrorCode == appleCode)
            #expect(await fake.state.count("GET image/list") == 1)  // 4xx: not retried
        }
    }

    @Test func aTokenAppleRefusesIsUnauthorized() async throws {
        let fake = FakeRetentionMessaging(appKey: P256.Signing.PrivateKey())  // trusts another key
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            #expect(await Self.error { _ = try await client.messages() }?.code == .unauthorized)
            #expect(await fake.ledger.rejectedTokens == 1)
        }
    }

    @Test(arguments: ["unix-milliseconds", "seconds"])
    func rateLimitedAnswerIsRetriedAfterRetryAfter(form: String) async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            let retryAfter = form == "seconds" ? "1" : String(Int64(Date().timeIntervalSince1970 * 1000) + 600)
            await fake.state.inject("GET message/list", [.error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", retryAfter)])])
            let started = ContinuousClock.now
            let messages = try await client.messages()
            #expect(messages.isEmpty)
            #expect(ContinuousClock.now - started >= .milliseconds(450))
            #expect(await fake.state.count("GET message/list") == 2)
        }
    }

    @Test func aRetryAfterBeyondTheBoundFailsAsRateLimited() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            let later = String(Int64(Date().timeIntervalSince1970 * 1000) + 120_000)
            await fake.state.inject("GET message/list", [.error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", later)])])
            let started = ContinuousClock.now
            let error = await Self.error { _ = try await client.messages() }
            #expect(error?.code == .rateLimited)
            #expect(error?.appleErrorCode == 4_290_000)
            // Refused at once rather than after the 120 s Retry-After (bounded generously: a loaded machine is slow).
            #expect(ContinuousClock.now - started < .seconds(60))
            #expect(await fake.state.count("GET message/list") == 1)
        }
    }

    @Test func appleRateLimitIsWaitedOutRequestAfterRequest() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            await fake.state.setLimits(rateLimitPerSecond: 4)
            let client = try self.client(port: port, .production)
            for _ in 0..<3 { _ = try await client.images() }
            #expect(await fake.state.count("GET image/list") >= 3)
        }
    }

    @Test func theClientsOwnRateLimitSpacesRequests() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            // Refuses two requests within a quarter of a second: the client's 1 s spacing stays clear of it even when
            // a loaded machine delays one request (at 2 a second, one late request could land within half a second).
            await fake.state.setLimits(rateLimitPerSecond: 4)
            var options = Self.options
            options.rateLimit = RetentionMessagingClient.RateLimit()  // Apple's: 1 a second in Production
            let client = try self.client(port: port, .production, options: options)
            let started = ContinuousClock.now
            for _ in 0..<3 { _ = try await client.images() }
            #expect(ContinuousClock.now - started >= .milliseconds(1900))
            #expect(await fake.state.count("GET image/list") == 3)  // no 429
        }
    }

    @Test func aServerErrorIsRetriedForAListButNotForAnUpload() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            await fake.state.inject("GET image/list", [.error(.internalServerError, code: 5_000_001)])
            #expect(try await client.images().isEmpty)
            #expect(await fake.state.count("GET image/list") == 2)

            await fake.state.inject("PUT image", [.error(.internalServerError, code: 5_000_000)])
            let error = await Self.error {
                try await client.uploadImage(identifier: Self.image, png: Self.png(width: 3840, height: 400), size: .fullSize)
            }
            #expect(error?.code == .appStoreUnavailable)
            #expect(await fake.state.count("PUT image") == 1)
        }
    }

    @Test func theTokenIsNeverLogged() async throws {
        let fake = FakeRetentionMessaging(appKey: P256.Signing.PrivateKey())  // refuses every token: the error path logs
        let lines = CapturedLines()
        try await fake.run { port in
            var logger = Logger(label: "test") { _ in CapturingHandler(lines: lines) }
            logger.logLevel = .trace
            let client = try self.client(port: port, .production, logger: logger)
            await fake.state.inject("GET image/list", [.error(.tooManyRequests, code: 4_290_000, headers: [("Retry-After", "0")])])
            _ = await Self.error { _ = try await client.images() }
            let error = await Self.error { _ = try await client.messages() }
            #expect(error?.code == .unauthorized)
            #expect(!(error?.message.contains("eyJ") ?? true))
        }
        let logged = lines.all
        #expect(!logged.isEmpty)
        #expect(!logged.contains { $0.contains("eyJ") || $0.contains("Bearer") })  // a JWT starts with eyJ
    }

    // MARK: - Apple's rules, enforced by the stand-in

    @Test func uploadsAreNotIdempotent() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            let png = Self.png(width: 3840, height: 400)
            try await client.uploadImage(identifier: Self.image, png: png, size: .fullSize)
            let image = await Self.error { try await client.uploadImage(identifier: Self.image.uppercased(), png: png, size: .fullSize) }
            #expect(image?.code == .alreadyExists)
            #expect(image?.appleErrorCode == 4_090_000)

            let id = UUID().uuidString
            try await client.uploadMessage(identifier: id, message: RetentionMessage(header: "Stay", body: "Please"))
            let message = await Self.error {
                try await client.uploadMessage(identifier: id, message: RetentionMessage(header: "Stay", body: "Other"))
            }
            #expect(message?.code == .alreadyExists)
            #expect(message?.appleErrorCode == 4_090_001)
            #expect(await fake.state.count("PUT message") == 2)
        }
    }

    @Test func twoThousandImagesAndMessagesAreTheMost() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            await fake.state.seed(images: 2000, messages: 2000)
            let client = try self.client(port: port, .production)
            let image = await Self.error {
                try await client.uploadImage(identifier: UUID().uuidString, png: Self.png(width: 1024, height: 1024), size: .bulletPoint)
            }
            #expect(image?.code == .limitReached)
            #expect(image?.appleErrorCode == 4_030_014)
            let message = await Self.error {
                try await client.uploadMessage(identifier: UUID().uuidString, message: RetentionMessage(header: "h", body: "b"))
            }
            #expect(message?.code == .limitReached)
            #expect(message?.appleErrorCode == 4_030_016)
            #expect(try await client.images().count == 2000)
        }
    }

    @Test func productionUploadsWaitForApprovalBeforeTheyCanBeDefaults() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .production)
            try await client.uploadImage(identifier: Self.image, png: Self.png(width: 3840, height: 600), size: .fullSize)
            let message = UUID().uuidString.lowercased()
            try await client.uploadMessage(
                identifier: message,
                message: RetentionMessage(
                    header: "Before you go",
                    body: "Your plan, half price",
                    image: .init(imageIdentifier: Self.image, altText: "A plan")
                )
            )
            #expect(try await client.images().first?.imageState == .pending)
            #expect(try await client.messages().first?.messageState == .pending)

            let product = "com.example.monthly"
            let pendingMessage = await Self.error {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            }
            #expect(pendingMessage?.code == .notApproved)
            #expect(pendingMessage?.appleErrorCode == 4_030_017)
            await fake.state.approveMessage(message)
            let pendingImage = await Self.error {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            }
            #expect(pendingImage?.code == .notApproved)
            #expect(pendingImage?.appleErrorCode == 4_030_018)
            await fake.state.approveImage(Self.image)
            #expect(try await client.defaultMessage(productId: product, locale: "en-US") == nil)
            try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            #expect(try await client.defaultMessage(productId: product, locale: "en-US") == message)
            #expect(try await client.messages().first?.messageState == .approved)

            let rejected = UUID().uuidString.lowercased()
            try await client.uploadMessage(identifier: rejected, message: RetentionMessage(header: "h", body: "b"))
            await fake.state.rejectMessage(rejected)
            #expect(try await client.messages().first { $0.messageIdentifier == rejected }?.messageState == .rejected)
            let refused = await Self.error {
                try await client.configureDefaultMessage(productId: product, locale: "fr-FR", messageIdentifier: rejected)
            }
            #expect(refused?.code == .notApproved)

            #expect(await Self.error { try await client.deleteImage(identifier: Self.image) }?.code == .imageInUse)
            try await client.deleteDefaultMessage(productId: product, locale: "en-US")
            try await client.deleteDefaultMessage(productId: product, locale: "en-US")  // idempotent
            try await client.deleteMessage(identifier: message)
            try await client.deleteImage(identifier: Self.image)
            #expect(await Self.error { try await client.deleteImage(identifier: Self.image) }?.code == .notFound)
            #expect(await Self.error { try await client.deleteMessage(identifier: message) }?.code == .notFound)
            let unknown = await Self.error {
                try await client.configureDefaultMessage(productId: product, locale: "en-US", messageIdentifier: message)
            }
            #expect(unknown?.code == .notFound)
        }
    }

    @Test func aMessageUsingAnImageOfTheWrongSizeClassIsRefusedByApple() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            try await client.uploadImage(identifier: Self.bulletImage, png: Self.png(width: 1024, height: 1024), size: .bulletPoint)
            let error = await Self.error {
                try await client.uploadMessage(
                    identifier: UUID().uuidString,
                    message: RetentionMessage(
                        header: "h",
                        body: "b",
                        image: .init(imageIdentifier: Self.bulletImage, altText: "a")
                    )
                )
            }
            #expect(error?.code == .invalidImageSize)
            #expect(error?.appleErrorCode == 4_000_216)
        }
    }

    @Test func sandboxApprovesAtOnce() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let client = try self.client(port: port, .sandbox)
            let message = UUID().uuidString
            try await client.uploadMessage(identifier: message, message: RetentionMessage(header: "h", body: "b"))
            #expect(try await client.messages().first?.messageState == .approved)
            try await client.configureDefaultMessage(productId: "com.example.monthly", locale: "en-US", messageIdentifier: message)
            #expect(await fake.state.messageState(message, in: "production") == nil)
        }
    }

    // MARK: - The performance test

    @Test func aPerformanceTestThatFailsThenPassesUnlocksProduction() async throws {
        let fake = FakeRetentionMessaging(appKey: appKey)
        try await fake.run { port in
            let sandbox = try self.client(port: port, .sandbox)
            let production = try self.client(port: port, .production)
            let url = "https://offers.example.com/v1/retention/appstore"
            #expect(await Self.error { try await production.configureRealtimeURL(url) }?.code == .noPassingTest)
            #expect(try await sandbox.realtimeURL() == nil)
            #expect(
                await Self.error { _ = try await sandbox.startPerformanceTest(originalTransactionId: "2000000123456789") }?.code
                    == .invalidPerformanceTestRequest
            )
            try await sandbox.configureRealtimeURL(url)
            await fake.state.scriptPerformanceTests([.fail, .pass])

            let first = try await sandbox.startPerformanceTest(originalTransactionId: "2000000123456789")
            #expect(first.config?.responseTimeThreshold == 700)
            let requestId = try #require(first.requestId)
            #expect(
                await Self.error { _ = try await sandbox.startPerformanceTest(originalTransactionId: "2000000123456789") }?.code
                    == .performanceTestInProgress
            )
            let polls = Polls()
            let failed = try await sandbox.waitForPerformanceTest(requestId: requestId, interval: .milliseconds(10)) { pending in
                await polls.add(pending)
            }
            #expect(failed.result == .fail)
            #expect(failed.responseTimes?.p99 == 2400)
            #expect(failed.failures == ["TIMED_OUT": 19])
            #expect(failed.successRate == 81)
            #expect(await polls.count == 1)
            #expect(await Self.error { try await production.configureRealtimeURL(url) }?.code == .noPassingTest)

            let second = try await sandbox.startPerformanceTest(originalTransactionId: "2000000123456789")
            let passed = try await production.waitForPerformanceTest(requestId: try #require(second.requestId), interval: .milliseconds(10))
            #expect(passed.result == .pass)
            #expect(passed.responseTimes?.p50 == 40)
            #expect(passed.target == url)
            #expect(await fake.state.count("POST performanceTest", in: "production") == 0)  // always the Sandbox host

            try await production.configureRealtimeURL(url)
            #expect(try await production.realtimeURL() == url)
            try await production.deleteRealtimeURL()
            #expect(try await production.realtimeURL() == nil)
            #expect(await Self.error { _ = try await sandbox.performanceTestResult(requestId: "unknown-run") }?.code == .notFound)
        }
    }

    // MARK: - Helpers

    static let options = RetentionMessagingClient.Options(timeout: .seconds(10), maximumRetryAfter: .seconds(5), maximumAttempts: 3, rateLimit: .off)

    private func client(
        port: Int,
        _ environment: AppStoreEnvironment,
        options: RetentionMessagingClient.Options = options,
        logger: Logger = Logger(label: "test")
    ) throws -> RetentionMessagingClient {
        var configuration = AppStoreServerAPIConfiguration(
            keyIdentifier: FakeAppStore.keyIdentifier,
            privateKeyPEM: appKey.pemRepresentation,
            issuerId: FakeAppStore.issuerId,
            bundleIdentifier: TestPayloads.bundleIdentifier
        )
        configuration.baseURLs = .init(production: "http://localhost:\(port)/production", sandbox: "http://localhost:\(port)/sandbox")
        configuration.retry.initialBackoff = .milliseconds(10)
        configuration.retry.maximumBackoff = .milliseconds(50)
        return try RetentionMessagingClient(configuration: configuration, environment: environment, options: options, logger: logger)
    }

    /// The error `body` throws, if it is one of this client's.
    static func error(_ body: () async throws -> Void) async -> RetentionMessagingError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? RetentionMessagingError
        }
    }

    /// A PNG's signature, header chunk, optional `tRNS`, a little image data and the end: enough for both readers
    /// (neither decodes pixels).
    static func png(width: Int, height: Int, colourType: UInt8 = 2, transparencyChunk: Bool = false) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be32(data.count) + Array(type.utf8) + data + [0, 0, 0, 0] }
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes += chunk("IHDR", be32(width) + be32(height) + [8, colourType, 0, 0, 0])
        if colourType == 3 { bytes += chunk("PLTE", [0, 0, 0, 255, 255, 255]) }
        if transparencyChunk { bytes += chunk("tRNS", [0]) }
        bytes += chunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])
        bytes += chunk("IEND", [])
        return bytes
    }
}

/// The `PENDING` results a poll reported.
private actor Polls {
    var count = 0
    func add(_ result: RetentionPerformanceTestResult) { count += 1 }
}

/// Every log line and its metadata, as text.
private final class CapturedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func add(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}

private struct CapturingHandler: LogHandler {
    let lines: CapturedLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = self.metadata.merging(event.metadata ?? [:]) { $1 }
        lines.add("\(event.message) \(all.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))")
    }
}
