import Synchronization

/// A clock that moves only when a test moves it (``advance(by:)``), for the state machines that take theirs injected:
/// `SigningConnectionStateMachine`, `IdleTimeoutStateMachine`.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        /// The time since the clock's start.
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let current = Mutex(Instant(offset: .zero))

    var now: Instant { current.withLock { $0 } }

    var minimumResolution: Duration { .nanoseconds(1) }

    /// Moves the clock on.
    func advance(by duration: Duration) {
        current.withLock { $0 = $0.advanced(by: duration) }
    }

    /// The instant `offset` after the clock's start.
    static func at(_ offset: Duration) -> Instant { Instant(offset: offset) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        while now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }
}
