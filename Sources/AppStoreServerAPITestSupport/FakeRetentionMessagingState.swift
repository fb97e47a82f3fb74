import Foundation
import HTTPTypes

/// What the fake Retention Messaging API holds for one app, per environment, and what tests script into it.
///
/// Built from Apple's documentation of each endpoint (the Retention Messaging API pages and the models of Apple's
/// app-store-server-library); where Apple documents no behaviour, the choice is named in a comment.
public actor FakeRetentionMessagingState {
    /// An uploaded image.
    public struct Image: Sendable, Hashable {
        public var size: String
        public var state: String
    }

    /// An uploaded message, with what it referenced.
    public struct Message: Sendable, Hashable {
        public var state: String
        public var imageIdentifiers: [String]
    }

    /// What one scripted performance test ends as.
    public struct PerformanceOutcome: Sendable, Hashable {
        /// `PASS` or `FAIL`.
        public var result: String
        public var successRate: Int
        public var p50: Int, p90: Int, p95: Int, p99: Int, average: Int
        public var failures: [String: Int]
        /// How many polls answer `PENDING` before the result.
        public var pendingPolls: Int

        public init(
            result: String,
            successRate: Int = 100,
            p50: Int = 40,
            p90: Int = 80,
            p95: Int = 120,
            p99: Int = 300,
            average: Int = 55,
            failures: [String: Int] = [:],
            pendingPolls: Int = 1
        ) {
            self.result = result
            self.successRate = successRate
            self.p50 = p50
            self.p90 = p90
            self.p95 = p95
            self.p99 = p99
            self.average = average
            self.failures = failures
            self.pendingPolls = pendingPolls
        }

        /// A passed test.
        public static let pass = PerformanceOutcome(result: "PASS")
        /// A failed test: slow answers and timeouts.
        public static let fail = PerformanceOutcome(
            result: "FAIL",
            successRate: 81,
            p50: 450,
            p90: 900,
            p95: 1200,
            p99: 2400,
            average: 520,
            failures: ["TIMED_OUT": 19]
        )
    }

    struct Environment {
        var images: [String: Image] = [:]
        var messages: [String: Message] = [:]
        var defaults: [String: String] = [:]
        var realtimeURL: String?
    }

    struct PerformanceRun {
        var outcome: PerformanceOutcome
        var polls = 0
        var target: String
    }

    var environments: [String: Environment] = ["production": Environment(), "sandbox": Environment()]
    var runs: [String: PerformanceRun] = [:]
    var scriptedOutcomes: [PerformanceOutcome] = []
    /// Whether a Sandbox performance test has passed (Production's real-time URL may be set from then on).
    public private(set) var sandboxTestPassed = false
    /// Requests per endpoint name (`PUT image`, `GET image/list`, …) and environment, after the token checked out.
    public private(set) var calls: [String: Int] = [:]
    /// Answers to send instead of the real ones, per endpoint name, in order (429s, 500s).
    var injected: [String: [FakeResponse]] = [:]
    /// The most images and messages kept (Apple: 2,000 each).
    public var maximumItems = 2000
    /// Requests a second per endpoint and environment before a 429 (`nil`: no limit); Retry-After is Apple's UNIX
    /// time in milliseconds.
    public var rateLimitPerSecond: Double?
    var lastRequest: [String: ContinuousClock.Instant] = [:]

    public init() {}

    // MARK: - What tests do

    /// Apple approves an image.
    public func approveImage(_ identifier: String, in environment: String = "production") {
        environments[environment]?.images[identifier.lowercased()]?.state = "APPROVED"
    }

    /// Apple rejects an image.
    public func rejectImage(_ identifier: String, in environment: String = "production") {
        environments[environment]?.images[identifier.lowercased()]?.state = "REJECTED"
    }

    /// Apple approves a message.
    public func approveMessage(_ identifier: String, in environment: String = "production") {
        environments[environment]?.messages[identifier.lowercased()]?.state = "APPROVED"
    }

    /// Apple rejects a message.
    public func rejectMessage(_ identifier: String, in environment: String = "production") {
        environments[environment]?.messages[identifier.lowercased()]?.state = "REJECTED"
    }

    /// The next performance tests end as these, in order (then every test passes).
    public func scriptPerformanceTests(_ outcomes: [PerformanceOutcome]) {
        scriptedOutcomes = outcomes
    }

    /// The next requests to `endpoint` (`"PUT image"`, `"GET message/list"`, …) get these answers instead.
    public func inject(_ endpoint: String, _ responses: [FakeResponse]) {
        injected[endpoint, default: []] += responses
    }

    /// Sets the client-visible limits.
    public func setLimits(maximumItems: Int? = nil, rateLimitPerSecond: Double?? = nil) {
        if let maximumItems { self.maximumItems = maximumItems }
        if let rateLimitPerSecond { self.rateLimitPerSecond = rateLimitPerSecond }
    }

    /// Fills the catalogue with `count` approved images or messages (to reach Apple's limit quickly).
    public func seed(images: Int = 0, messages: Int = 0, in environment: String = "production") {
        for _ in 0..<images { environments[environment]?.images[UUID().uuidString.lowercased()] = Image(size: "FULL_SIZE", state: "APPROVED") }
        for _ in 0..<messages {
            environments[environment]?.messages[UUID().uuidString.lowercased()] = Message(state: "APPROVED", imageIdentifiers: [])
        }
    }

    public func imageState(_ identifier: String, in environment: String = "production") -> String? {
        environments[environment]?.images[identifier.lowercased()]?.state
    }

    public func messageState(_ identifier: String, in environment: String = "production") -> String? {
        environments[environment]?.messages[identifier.lowercased()]?.state
    }

    public func realtimeURL(in environment: String) -> String? {
        environments[environment]?.realtimeURL
    }

    public func defaultMessage(productId: String, locale: String, in environment: String = "production") -> String? {
        environments[environment]?.defaults["\(productId)/\(locale)"]
    }

    public func count(_ endpoint: String, in environment: String = "production") -> Int {
        calls["\(environment) \(endpoint)", default: 0]
    }

    // MARK: - What the fake does

    /// Counts the call; the injected or rate-limit answer, if any.
    func admit(_ endpoint: String, environment: String) -> FakeResponse? {
        calls["\(environment) \(endpoint)", default: 0] += 1
        if var queue = injected[endpoint], !queue.isEmpty {
            let next = queue.removeFirst()
            injected[endpoint] = queue
            return next
        }
        if let rate = rateLimitPerSecond, rate > 0 {
            let key = "\(environment) \(endpoint)"
            let now = ContinuousClock.now
            let spacing = Duration.seconds(1 / rate)
            if let last = lastRequest[key], now - last < spacing {
                let wait = spacing - (now - last)
                let retryAt = Date().addingTimeInterval(Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
                return .error(
                    .tooManyRequests,
                    code: 4_290_000,
                    headers: [("Retry-After", String(Int64((retryAt.timeIntervalSince1970 * 1000).rounded(.up))))]
                )
            }
            lastRequest[key] = now
        }
        return nil
    }

    func uploadImage(_ id: String, size: String, environment: String) -> FakeResponse {
        guard environments[environment]?.images[id] == nil else { return .error(.conflict, code: 4_090_000) }
        guard (environments[environment]?.images.count ?? 0) < maximumItems else { return .error(.forbidden, code: 4_030_014) }
        environments[environment]?.images[id] = Image(size: size, state: environment == "sandbox" ? "APPROVED" : "PENDING")
        return FakeResponse()
    }

    func deleteImage(_ id: String, environment: String) -> FakeResponse {
        guard environments[environment]?.images[id] != nil else { return .error(.notFound, code: 4_040_014) }
        if environments[environment]?.messages.values.contains(where: { $0.imageIdentifiers.contains(id) }) == true {
            return .error(.forbidden, code: 4_030_019)
        }
        environments[environment]?.images[id] = nil
        return FakeResponse()
    }

    func imageList(environment: String) -> FakeResponse {
        let items = (environments[environment]?.images ?? [:]).sorted { $0.key < $1.key }.map { key, image in
            ["imageIdentifier": key, "imageState": image.state, "imageSize": image.size]
        }
        return .json(["imageIdentifiers": items])
    }

    /// Checks what a message references: a full-size image above the body, bullet-point images beside bullets.
    /// (Apple documents `BadRequestImageSizeError` for a mismatch; what it answers for an image it does not know is
    /// not documented — the fake answers `ImageNotFoundError`.)
    func uploadMessage(_ id: String, image: String?, bullets: [String], environment: String) -> FakeResponse {
        guard environments[environment]?.messages[id] == nil else { return .error(.conflict, code: 4_090_001) }
        guard (environments[environment]?.messages.count ?? 0) < maximumItems else { return .error(.forbidden, code: 4_030_016) }
        let images = environments[environment]?.images ?? [:]
        if let image {
            guard let known = images[image] else { return .error(.notFound, code: 4_040_014) }
            guard known.size == "FULL_SIZE" else { return .error(.badRequest, code: 4_000_216) }
        }
        for bullet in bullets {
            guard let known = images[bullet] else { return .error(.notFound, code: 4_040_014) }
            guard known.size == "BULLET_POINT" else { return .error(.badRequest, code: 4_000_216) }
        }
        environments[environment]?.messages[id] = Message(
            state: environment == "sandbox" ? "APPROVED" : "PENDING",
            imageIdentifiers: (image.map { [$0] } ?? []) + bullets
        )
        return FakeResponse()
    }

    func deleteMessage(_ id: String, environment: String) -> FakeResponse {
        guard environments[environment]?.messages[id] != nil else { return .error(.notFound, code: 4_040_015) }
        environments[environment]?.messages[id] = nil
        // Not documented: what becomes of a default naming a deleted message. The fake drops the default.
        let kept = (environments[environment]?.defaults ?? [:]).filter { $0.value != id }
        environments[environment]?.defaults = kept
        return FakeResponse()
    }

    func messageList(environment: String) -> FakeResponse {
        let items = (environments[environment]?.messages ?? [:]).sorted { $0.key < $1.key }.map { key, message in
            ["messageIdentifier": key, "messageState": message.state]
        }
        return .json(["messageIdentifiers": items])
    }

    func configureDefault(_ key: String, messageIdentifier: String, environment: String) -> FakeResponse {
        guard let message = environments[environment]?.messages[messageIdentifier] else { return .error(.notFound, code: 4_040_015) }
        guard message.state == "APPROVED" else { return .error(.forbidden, code: 4_030_017) }
        let images = environments[environment]?.images ?? [:]
        guard message.imageIdentifiers.allSatisfy({ images[$0]?.state == "APPROVED" }) else { return .error(.forbidden, code: 4_030_018) }
        environments[environment]?.defaults[key] = messageIdentifier
        return FakeResponse()
    }

    func getDefault(_ key: String, environment: String) -> FakeResponse {
        guard let id = environments[environment]?.defaults[key] else { return .error(.notFound, code: 4_040_020) }
        return .json(["messageIdentifier": id])
    }

    func deleteDefault(_ key: String, environment: String) -> FakeResponse {
        environments[environment]?.defaults[key] = nil
        return FakeResponse()
    }

    func configureRealtimeURL(_ url: String, environment: String) -> FakeResponse {
        if environment == "production", !sandboxTestPassed { return .error(.forbidden, code: 4_030_026) }
        environments[environment]?.realtimeURL = url
        return FakeResponse()
    }

    func getRealtimeURL(environment: String) -> FakeResponse {
        guard let url = environments[environment]?.realtimeURL else { return .error(.notFound, code: 4_040_021) }
        return .json(["realtimeURL": url])
    }

    func deleteRealtimeURL(environment: String) -> FakeResponse {
        environments[environment]?.realtimeURL = nil
        return FakeResponse()
    }

    /// Starts a test. Not documented: what Apple answers without a Sandbox URL; the fake answers
    /// `InvalidPerformanceTestRequestError` (4000211).
    func startPerformanceTest(originalTransactionId: String) -> FakeResponse {
        guard !originalTransactionId.isEmpty, originalTransactionId.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return .error(.badRequest, code: 4_000_006)
        }
        guard let target = environments["sandbox"]?.realtimeURL else { return .error(.badRequest, code: 4_000_211) }
        if runs.values.contains(where: { $0.polls <= $0.outcome.pendingPolls }) { return .error(.badRequest, code: 4_000_213) }
        let outcome = scriptedOutcomes.isEmpty ? .pass : scriptedOutcomes.removeFirst()
        let id = UUID().uuidString.lowercased()
        runs[id] = PerformanceRun(outcome: outcome, target: target)
        return .json(StartedBody(config: Self.config, requestId: id))
    }

    func performanceTestResult(_ id: String) -> FakeResponse {
        guard var run = runs[id] else { return .error(.notFound, code: 4_040_018) }
        run.polls += 1
        runs[id] = run
        let outcome = run.outcome
        guard run.polls > outcome.pendingPolls else {
            return .json(
                ResultBody(
                    config: Self.config,
                    target: run.target,
                    result: "PENDING",
                    successRate: nil,
                    numPending: 40,
                    responseTimes: nil,
                    failures: nil
                )
            )
        }
        if outcome.result == "PASS" { sandboxTestPassed = true }
        return .json(
            ResultBody(
                config: Self.config,
                target: run.target,
                result: outcome.result,
                successRate: outcome.successRate,
                numPending: 0,
                responseTimes: .init(average: outcome.average, p50: outcome.p50, p90: outcome.p90, p95: outcome.p95, p99: outcome.p99),
                failures: outcome.failures.isEmpty ? nil : outcome.failures
            )
        )
    }

    static let config = Config(
        maxConcurrentRequests: 10,
        totalRequests: 100,
        totalDuration: 60_000,
        responseTimeThreshold: 700,
        successRateThreshold: 95
    )

    struct Config: Encodable, Sendable {
        var maxConcurrentRequests: Int
        var totalRequests: Int
        var totalDuration: Int
        var responseTimeThreshold: Int
        var successRateThreshold: Int
    }

    struct StartedBody: Encodable, Sendable {
        var config: Config
        var requestId: String
    }

    struct Times: Encodable, Sendable {
        var average: Int, p50: Int, p90: Int, p95: Int, p99: Int
    }

    struct ResultBody: Encodable, Sendable {
        var config: Config
        var target: String
        var result: String
        var successRate: Int?
        var numPending: Int
        var responseTimes: Times?
        var failures: [String: Int]?
    }
}
