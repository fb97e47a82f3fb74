import NIOCore

/// Hummingbird's idle-timeout rule (`HTTPConnectionStateHandler.StateMachine`, internal to HummingbirdCore) as a
/// value of its own, which ``HTTP1IdleTimeoutHandler`` executes at the front of the pipeline, where it sees the
/// event-loop signing path's requests too: the timer runs from the connection's start and from each response's end;
/// a part read moves it on; it never closes a connection whose request is read and not yet answered. Events in,
/// actions out, the clock injected (the event loop's in the server, a clock a test moves by hand in
/// `IdleTimeoutHandlerTests`).
struct IdleTimeoutStateMachine<C: Clock> {
    let idleTimeout: C.Duration
    let clock: C

    private var requestsInProgress = 0
    private var isRequestBeingRead = false
    private var lastActiveTime: C.Instant
    private(set) var isActive = false

    init(idleTimeout: C.Duration, clock: C) {
        self.idleTimeout = idleTimeout
        self.clock = clock
        self.lastActiveTime = clock.now
    }

    enum TimerAction: Equatable {
        /// Start the timer, to fire at `deadline` (nothing if one is running: it rearms itself from the last activity).
        case schedule(deadline: C.Instant)
        case doNothing
    }

    /// The connection is active (its handler added to an active channel, or the channel became active).
    mutating func becameActive() -> TimerAction {
        guard !isActive else { return .doNothing }
        isActive = true
        lastActiveTime = clock.now
        return .schedule(deadline: lastActiveTime.advanced(by: idleTimeout))
    }

    /// The connection is gone: no timer closes it.
    mutating func becameInactive() {
        isActive = false
    }

    /// The parts of a request, as read.
    enum Part: Equatable {
        case head, body, end
    }

    /// A request part was read: the connection is active now.
    mutating func read(_ part: Part) {
        lastActiveTime = clock.now
        switch part {
        case .head:
            isRequestBeingRead = true
            requestsInProgress += 1
        case .body:
            break
        case .end:
            isRequestBeingRead = false
        }
    }

    /// A response's end was written: with no other request in progress, the idle time starts now.
    mutating func wroteResponseEnd() -> TimerAction {
        requestsInProgress = max(requestsInProgress - 1, 0)
        guard requestsInProgress == 0, isActive else { return .doNothing }
        lastActiveTime = clock.now
        return .schedule(deadline: lastActiveTime.advanced(by: idleTimeout))
    }

    enum TimeoutAction: Equatable {
        case close
        /// Something happened since the timer was set: fire again at `deadline`.
        case reschedule(deadline: C.Instant)
        /// A request read and not yet answered (its response's end starts the timer again), or the connection gone.
        case doNothing
    }

    /// The timer fired.
    mutating func timerFired() -> TimeoutAction {
        guard isActive else { return .doNothing }
        if !isRequestBeingRead, requestsInProgress > 0 { return .doNothing }
        let deadline = lastActiveTime.advanced(by: idleTimeout)
        return clock.now >= deadline ? .close : .reschedule(deadline: deadline)
    }
}

/// An event loop's clock as a `Clock`: `EventLoop.now`, which an `EmbeddedEventLoop` moves by hand, so the handlers
/// that run a state machine on it are tested on the loop's own time.
struct EventLoopClock: Clock {
    struct Instant: InstantProtocol {
        var deadline: NIODeadline

        func advanced(by duration: Duration) -> Instant { Instant(deadline: deadline + TimeAmount(duration)) }

        func duration(to other: Instant) -> Duration {
            .nanoseconds(Int64(clamping: other.deadline.uptimeNanoseconds) - Int64(clamping: deadline.uptimeNanoseconds))
        }

        static func < (a: Instant, b: Instant) -> Bool { a.deadline < b.deadline }
    }

    let eventLoop: any EventLoop

    var now: Instant { Instant(deadline: eventLoop.now) }

    var minimumResolution: Duration { .nanoseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await eventLoop.scheduleTask(deadline: deadline.deadline) {}.futureResult.get()
    }
}
