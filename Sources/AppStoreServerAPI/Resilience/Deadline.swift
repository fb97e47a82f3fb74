import Synchronization

/// Runs `operation`, giving up after `timeout`: the result, or `nil` when the time ran out first (the operation is
/// then cancelled). An operation that ignores cancellation (a connection pool retrying a dead host) is left running;
/// the caller is not kept waiting for it. The one deadline of the package: the App Store clients' requests, the
/// retention deadline, the store's start-up and readiness checks.
package func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
    let outcome = FirstOutcome<T?>()
    let work = Task {
        do { outcome.finish(.success(try await operation())) } catch { outcome.finish(.failure(error)) }
    }
    let timer = Task {
        try? await Task.sleep(for: timeout)
        guard !Task.isCancelled else { return }
        outcome.finish(.success(nil))
        work.cancel()
    }
    // The first outcome stops the other side: a finished operation cancels the timer (no task sleeps on for the
    // whole timeout per call), and a caller that is cancelled (its client hung up) cancels the operation.
    outcome.onFinish { timer.cancel() }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
            outcome.set(continuation)
        }
    } onCancel: {
        work.cancel()
        timer.cancel()
        outcome.finish(.failure(CancellationError()))
    }
}

/// Resumes a continuation with the first outcome only; an outcome that arrives before the continuation is kept
/// until it is set.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var finished = false
        var onFinish: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            guard let result = state.result else {
                state.continuation = continuation
                return nil
            }
            state.result = nil
            return result
        }
        if let early { continuation.resume(with: early) }
    }

    /// Runs `action` once the first outcome arrives (at once if it has).
    func onFinish(_ action: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            if state.finished { return true }
            state.onFinish = action
            return false
        }
        if already { action() }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, action) = state.withLock { state -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            let action = state.onFinish
            state.onFinish = nil
            guard let continuation = state.continuation else {
                state.result = result
                return (nil, action)
            }
            state.continuation = nil
            return (continuation, action)
        }
        continuation?.resume(with: result)
        action?()
    }
}
