/// Takes an app's Get Retention Message endpoint live, as Apple's *Setting up your Get Retention Message endpoint*
/// orders it: configure the Sandbox real-time URL, run Apple's performance test in Sandbox and poll it to its result,
/// and — on `PASS` only — configure the Production real-time URL (Apple refuses it before, with
/// `ForbiddenNoPassingTestError`).
///
/// Every step goes through ``RetentionMessagingClient``, so Apple's rate limits and `Retry-After` are kept to; what
/// happens is told to `report` as it happens (the command prints it).
///
/// ## Usage
///
/// ```swift
/// let goLive = RetentionGoLive(sandbox: sandboxClient, production: productionClient)
/// let outcome = try await goLive.run(
///     productionURL: "https://offers.example.com/v1/retention/appstore",
///     sandboxURL: "https://sandbox-offers.example.com/v1/retention/appstore",
///     originalTransactionId: "2000000123456789") { line in print(line) }
/// if case .failed = outcome { /* fix what RetentionGoLive.advice says, then run again */ }
/// ```
public struct RetentionGoLive: Sendable {
    /// What became of the attempt.
    public enum Outcome: Sendable, Hashable {
        /// The test passed and Production's URL is configured.
        case live(RetentionPerformanceTestResult)
        /// The test failed; Production is unchanged.
        case failed(RetentionPerformanceTestResult)
        /// The test ended with a status this client does not know; Production is unchanged.
        case inconclusive(RetentionPerformanceTestResult)
    }

    let sandbox: RetentionMessagingClient
    let production: RetentionMessagingClient

    /// - Parameters:
    ///   - sandbox: A client of the app's Sandbox environment.
    ///   - production: A client of the app's Production environment.
    public init(sandbox: RetentionMessagingClient, production: RetentionMessagingClient) {
        self.sandbox = sandbox
        self.production = production
    }

    /// Runs the steps.
    ///
    /// - Parameters:
    ///   - productionURL: The endpoint's Production URL (`https://`, at most 256 characters).
    ///   - sandboxURL: The endpoint's Sandbox URL (Apple recommends a separate one); default `productionURL`.
    ///   - originalTransactionId: The original transaction of an active auto-renewable subscription bought in Sandbox.
    ///   - resumeRequestId: The `requestId` of a test already started, to poll instead of starting one.
    ///   - pollInterval: The wait between two polls (Sandbox allows one request every 10 s per endpoint).
    ///   - timeout: How long to poll at most.
    ///   - report: Called with each line to show.
    /// - Returns: Whether the endpoint is live in Production, with the test's result.
    /// - Throws: ``RetentionMessagingError`` when a step fails (Production is configured only after a `PASS`).
    public func run(
        productionURL: String,
        sandboxURL: String? = nil,
        originalTransactionId: String,
        resumeRequestId: String? = nil,
        pollInterval: Duration = .seconds(15),
        timeout: Duration = .seconds(3600),
        report: @escaping @Sendable (String) -> Void
    ) async throws(RetentionMessagingError) -> Outcome {
        let sandboxURL = sandboxURL ?? productionURL
        _ = try RetentionMessagingLimits.realtimeURL(productionURL)
        try await sandbox.configureRealtimeURL(sandboxURL)
        report("Sandbox real-time URL: \(sandboxURL)")
        let requestId: String
        if let resumeRequestId {
            requestId = resumeRequestId
            report("Polling performance test \(requestId)")
        } else {
            let started: RetentionPerformanceTestStarted
            do {
                started = try await sandbox.startPerformanceTest(originalTransactionId: originalTransactionId)
            } catch  where error.code == .performanceTestInProgress {
                throw RetentionMessagingError(
                    .performanceTestInProgress,
                    "a performance test is already running: wait for it to end (its totalDuration), or pass its request ID with --request-id",
                    appleErrorCode: error.appleErrorCode
                )
            }
            requestId = started.requestId ?? ""
            report("Performance test \(requestId) started" + (started.config.map { " (\(Self.describe($0)))" } ?? ""))
        }
        let result = try await sandbox.waitForPerformanceTest(requestId: requestId, interval: pollInterval, timeout: timeout) { pending in
            report("  pending" + (pending.numPending.map { ": \($0) requests to go" } ?? ""))
        }
        for line in Self.summary(result) { report(line) }
        switch result.result {
        case .pass?:
            try await production.configureRealtimeURL(productionURL)
            report("Production real-time URL: \(productionURL)")
            report("Live: the App Store now asks this endpoint in Production, for every product and locale with a default message.")
            return .live(result)
        case .fail?:
            for line in Self.advice(result) { report(line) }
            return .failed(result)
        default:
            report("The test ended as \(result.result?.rawValue ?? "no status"); Production was not configured. Run again later.")
            return .inconclusive(result)
        }
    }

    /// The result in lines: status, success rate, percentiles, failures.
    public static func summary(_ result: RetentionPerformanceTestResult) -> [String] {
        var lines = [
            "Result: \(result.result?.rawValue ?? "unknown")"
                + (result.successRate.map { ", success rate \($0) %" } ?? "")
                + (result.config?.successRateThreshold.map { " (needed: \($0) %)" } ?? "")
        ]
        if let times = result.responseTimes {
            let parts = [("p50", times.p50), ("p90", times.p90), ("p95", times.p95), ("p99", times.p99), ("average", times.average)]
                .compactMap { name, value in value.map { "\(name) \($0) ms" } }
            lines.append(
                "Response times: " + parts.joined(separator: ", ")
                    + (result.config?.responseTimeThreshold.map { " (limit: \($0) ms)" } ?? "")
            )
        }
        if let failures = result.failures, !failures.isEmpty {
            lines.append("Failures: " + failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        return lines
    }

    /// What to do after a failed test.
    public static func advice(_ result: RetentionPerformanceTestResult) -> [String] {
        var lines = ["Not live: Production's real-time URL was not configured (Apple refuses it until a Sandbox test passes)."]
        let failures = result.failures ?? [:]
        if failures["TIMED_OUT"] != nil || (result.responseTimes?.p99 ?? 0) > (result.config?.responseTimeThreshold ?? 700) {
            lines.append(
                """
                - Answers were too slow: run Benchmarks/Retention/retention-perf.sh against this deployment, check \
                OFFER_SIGNER_RETENTION_DEADLINE (default 500 ms) stays under Apple's limit, and the database's latency.
                """
            )
        }
        if failures["TLS_ISSUE"] != nil {
            lines.append("- TLS failed: the URL needs a valid certificate and TLS 1.2 or later.")
        }
        if failures["NO_RESPONSE"] != nil || failures["SOCKET_ISSUE"] != nil || failures["PREMATURE_CLOSE"] != nil {
            lines.append(
                "- Apple could not reach the endpoint: check DNS, the firewall and the load balancer in front of POST /v1/retention/appstore."
            )
        }
        if failures["UNSUCCESSFUL_HTTP_RESPONSE_CODE"] != nil || failures["INVALID_RESPONSE"] != nil {
            lines.append(
                """
                - Answers were refused: check the access log for 4xx/5xx (Sandbox accepted in OFFER_SIGNER_ENVIRONMENTS, the app's appAppleId, \
                the product's retention entries and fallback).
                """
            )
        }
        lines.append("Then run the command again: it starts a new test.")
        return lines
    }

    static func describe(_ config: RetentionPerformanceTestConfig) -> String {
        [
            config.totalRequests.map { "\($0) requests" }, config.maxConcurrentRequests.map { "\($0) at once" },
            config.totalDuration.map { "about \($0 / 1000) s" }, config.responseTimeThreshold.map { "limit \($0) ms" },
        ].compactMap { $0 }.joined(separator: ", ")
    }
}
