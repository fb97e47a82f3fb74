import AppStoreNotifications
import AppStoreServerAPITestSupport
import Foundation
import Testing

@testable import AppStoreServerAPI

/// The pieces under the client, without a server: Retry-After, backoff, the rate limiter, the answer cache.
@Suite struct ResilienceTests {
    @Test func retryAfterReadsAppleMillisecondsRfcSecondsAndRefusesTheRest() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(RetryTiming.retryAfter("1800000001500", now: now) == .milliseconds(1500))
        #expect(RetryTiming.retryAfter("1800000002", now: now) == .seconds(2))
        #expect(RetryTiming.retryAfter(" 3 ", now: now) == .seconds(3))
        #expect(RetryTiming.retryAfter("0.5", now: now) == .milliseconds(500))
        #expect(RetryTiming.retryAfter("1800000000500.0", now: now) == .milliseconds(500))
        #expect(RetryTiming.retryAfter("1.2.3", now: now) == nil)
        #expect(RetryTiming.retryAfter("1e3", now: now) == nil)
        #expect(RetryTiming.retryAfter("0x10", now: now) == nil)
        #expect(RetryTiming.retryAfter("nan", now: now) == nil)
        #expect(RetryTiming.retryAfter("1799999999000", now: now) == .zero)  // in the past: no wait
        #expect(RetryTiming.retryAfter(nil, now: now) == nil)
        #expect(RetryTiming.retryAfter("", now: now) == nil)
        #expect(RetryTiming.retryAfter("-5", now: now) == nil)
        #expect(RetryTiming.retryAfter("soon", now: now) == nil)
        #expect(RetryTiming.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == nil)
        #expect(RetryTiming.retryAfter(String(repeating: "9", count: 40), now: now) == nil)
        #expect(RetryTiming.retryAfter(String(repeating: "9", count: 24), now: now) == .seconds(86_400 * 365))
        #expect(RetryTiming.retryAfter("9223372036854775807", now: now).map { $0 <= .seconds(86_400 * 365) } == true)
    }

    @Test func backoffGrowsWithJitterAndStaysUnderItsCap() {
        let policy = AppStoreServerAPIConfiguration.RetryPolicy(initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(300))
        for retry in [1, 2, 3, 10, 1000, Int.max] {
            let wait = RetryTiming.backoff(retry: retry, policy: policy)
            #expect(wait >= .zero && wait <= .milliseconds(300))
        }
        #expect((0..<50).allSatisfy { _ in RetryTiming.backoff(retry: 1, policy: policy) <= .milliseconds(100) })
    }

    @Test func theRateLimiterQueuesBeyondTheBurstAndRefusesPastTheDeadline() async throws {
        let limiter = RateLimiter(.init(productionPerSecond: 10, sandboxPerSecond: 1))
        let key = RateLimiter.Key(environment: .production, endpoint: .subscriptionStatuses)
        let now = ContinuousClock.now
        for _ in 0..<10 {
            #expect(await limiter.reserve(key, now: now, deadline: now + .seconds(1)) == .zero)
        }
        let wait = try #require(await limiter.reserve(key, now: now, deadline: now + .seconds(1)))
        #expect(wait > .milliseconds(99) && wait < .milliseconds(101))
        #expect(await limiter.reserve(key, now: now, deadline: now + .milliseconds(150)) == nil)
        // The Sandbox bucket is separate and slower.
        let sandbox = RateLimiter.Key(environment: .sandbox, endpoint: .subscriptionStatuses)
        #expect(await limiter.reserve(sandbox, now: now, deadline: now + .seconds(5)) == .zero)
        #expect(await limiter.reserve(sandbox, now: now, deadline: now + .seconds(5)) == .seconds(1))
        // A Retry-After pauses the bucket.
        let history = RateLimiter.Key(environment: .production, endpoint: .transactionHistory)
        await limiter.pause(history, until: now + .seconds(2), now: now)
        #expect(await limiter.reserve(history, now: now, deadline: now + .seconds(1)) == nil)
        #expect(await limiter.reserve(history, now: now, deadline: now + .seconds(3)).map { $0 >= .seconds(2) } == true)
    }

    @Test func theCacheRunsOneFlightPerKeyAndKeepsOnlySuccesses() async throws {
        let cache = AnswerCache<Int>(timeToLive: .seconds(60), capacity: 2)
        let runs = Runs()
        // Far off: only a bound for a machine too busy to schedule the 50 waiters, never the thing tested.
        let deadline = ContinuousClock.now + .seconds(120)
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await cache.value(
                        for: "a",
                        deadline: deadline,
                        timeoutError: CancellationError(),
                        cancellationError: CancellationError(),
                        event: { _ in },
                        operation: {
                            await runs.add()
                            try await Task.sleep(for: .milliseconds(50))
                            return 42
                        }
                    )
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(values == Array(repeating: 42, count: 50))
        #expect(await runs.count == 1)

        struct Failure: Error {}
        await #expect(throws: Failure.self) {
            try await cache.value(
                for: "b",
                deadline: deadline,
                timeoutError: CancellationError(),
                cancellationError: CancellationError(),
                event: { _ in },
                operation: {
                    throw Failure()
                }
            )
        }
        let retried = try await cache.value(
            for: "b",
            deadline: deadline,
            timeoutError: CancellationError(),
            cancellationError: CancellationError(),
            event: { _ in },
            operation: { 7 }
        )
        #expect(retried == 7)
    }

    @Test func aWaiterLeavesAtItsDeadlineWhileTheFlightGoesOn() async throws {
        struct TimedOut: Error {}
        let cache = AnswerCache<Int>(timeToLive: .seconds(60), capacity: 10)
        // The flight stays blocked until the gate opens: the waiter can only leave by its deadline.
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        await #expect(throws: TimedOut.self) {
            try await cache.value(
                for: "slow",
                deadline: .now + .milliseconds(100),
                timeoutError: TimedOut(),
                cancellationError: CancellationError(),
                event: { _ in },
                operation: {
                    for await _ in gate {}
                    return 1
                }
            )
        }
        // The flight is still held at the gate: the next caller joins it rather than starting another.
        let (events, report) = AsyncStream.makeStream(of: AnswerCache<Int>.Event.self)
        let joining = Task {
            try await cache.value(
                for: "slow",
                deadline: .now + .seconds(30),
                timeoutError: TimedOut(),
                cancellationError: CancellationError(),
                event: { report.yield($0) },
                operation: { 2 }
            )
        }
        var reported = events.makeAsyncIterator()
        #expect(await reported.next() == .joined)
        open.finish()
        #expect(try await joining.value == 1)  // the flight went on and its answer is shared
        // Ended: its answer is cached, and the caller after it is a hit.
        var event: AnswerCache<Int>.Event?
        let value = try await cache.value(
            for: "slow",
            deadline: .now + .seconds(5),
            timeoutError: TimedOut(),
            cancellationError: CancellationError(),
            event: { event = $0 },
            operation: { 3 }
        )
        #expect(value == 1)
        #expect(event == .hit)
    }

    @Test func theCacheStaysWithinItsCapacity() async throws {
        let cache = AnswerCache<Int>(timeToLive: .seconds(60), capacity: 3)
        for index in 0..<10 {
            _ = try await cache.value(
                for: "k\(index)",
                deadline: .now + .seconds(1),
                timeoutError: CancellationError(),
                cancellationError: CancellationError(),
                event: { _ in },
                operation: { index }
            )
        }
        var event: AnswerCache<Int>.Event?
        _ = try await cache.value(
            for: "k9",
            deadline: .now + .seconds(1),
            timeoutError: CancellationError(),
            cancellationError: CancellationError(),
            event: { event = $0 },
            operation: { -1 }
        )
        #expect(event == .hit)
        _ = try await cache.value(
            for: "k0",
            deadline: .now + .seconds(1),
            timeoutError: CancellationError(),
            cancellationError: CancellationError(),
            event: { event = $0 },
            operation: { -1 }
        )
        #expect(event == .started)
    }

    @Test func tokensAreSignedAsAppleRequiresAndReused() async throws {
        let key = P256Key.make()
        var configuration = AppStoreServerAPIConfiguration(
            keyIdentifier: "KEY",
            privateKeyPEM: key.pem,
            issuerId: "ISSUER",
            bundleIdentifier: "com.example.app"
        )
        configuration.tokenLifetime = .seconds(600)
        let provider = try BearerTokenProvider(configuration: configuration)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let token = try await provider.token(now: now)
        #expect(try await provider.token(now: now.addingTimeInterval(299)) == token)
        #expect(try await provider.token(now: now.addingTimeInterval(301)) != token)  // under 5 minutes left

        let parts = token.split(separator: ".").map(String.init)
        let header = try JSONSerialization.jsonObject(with: #require(Data(base64URL: parts[0]))) as? [String: String]
        #expect(header == ["alg": "ES256", "kid": "KEY", "typ": "JWT"])
        let claimsData = try #require(Data(base64URL: parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: claimsData) as? [String: Any])
        #expect(claims["iss"] as? String == "ISSUER")
        #expect(claims["aud"] as? String == "appstoreconnect-v1")
        #expect(claims["bid"] as? String == "com.example.app")
        #expect(claims["iat"] as? Int == 1_800_000_000)
        #expect(claims["exp"] as? Int == 1_800_000_600)
        #expect(key.verify(signature: try #require(Data(base64URL: parts[2])), signed: parts[0] + "." + parts[1]))
    }
}

private actor Runs {
    private(set) var count = 0
    func add() { count += 1 }
}
