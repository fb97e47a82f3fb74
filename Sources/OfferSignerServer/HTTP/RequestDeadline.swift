/// The request deadline, one rule for every request: the router's (``RequestDeadlineHandler``) and the event-loop
/// signing path's own (``SigningConnectionStateMachine``). A request whose body has not arrived in full
/// ``ConnectionLimits/requestTimeout`` after the read that brought its head ended is dropped with its connection:
/// closed, never answered (nothing of the request is handled, and a client still sending would read no answer in
/// order). A request read in full within that read starts no timer.
///
/// Events in, actions out, the clock injected (the event loop's in the server, a clock a test moves by hand in
/// `RequestDeadlineTests` and `SigningConnectionStateMachineTests`), as ``IdleTimeoutStateMachine`` is written.
struct RequestDeadline<C: Clock> where C.Duration == Duration {
    enum State: Equatable {
        /// No request of the caller's being read.
        case idle
        /// A request being read; `deadline`: when it passes, once armed.
        case reading(deadline: C.Instant?)
    }

    private(set) var state = State.idle
    /// How long after the end of the read that brought its head a request may take to arrive in full.
    let timeout: Duration
    let clock: C

    init(timeout: Duration, clock: C) {
        self.timeout = timeout
        self.clock = clock
    }

    /// A request's head was read: its deadline is armed when the read ends with the request incomplete.
    mutating func requestStarted() {
        state = .reading(deadline: nil)
    }

    enum TimerAction: Equatable {
        /// Start the timer, to fire at `deadline`; ``timerFired()`` says what then.
        case arm(deadline: C.Instant)
        case doNothing
    }

    /// A read ended: a request still incomplete gets its deadline, once, the timeout from now.
    mutating func readComplete() -> TimerAction {
        guard case .reading(deadline: nil) = state else { return .doNothing }
        let deadline = clock.now.advanced(by: timeout)
        state = .reading(deadline: deadline)
        return .arm(deadline: deadline)
    }

    /// The request's end was read.
    /// - Returns: whether its timer was armed (the caller cancels it).
    mutating func requestEnded() -> Bool {
        defer { state = .idle }
        if case .reading(.some) = state { return true }
        return false
    }

    enum TimeoutAction: Equatable {
        /// The request has not arrived in full: close the connection, without an answer.
        case close
        /// The request's end came first (a race with the timer's cancel), or the connection is gone: nothing to do.
        case doNothing
    }

    /// The timer fired (the event loop's timer is the authority on when).
    mutating func timerFired() -> TimeoutAction {
        guard case .reading(.some) = state else { return .doNothing }
        state = .idle
        return .close
    }

    /// The connection is gone: no timer closes it.
    mutating func closed() {
        state = .idle
    }
}
