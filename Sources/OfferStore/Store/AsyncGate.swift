import Dispatch
import Synchronization

/// A first-come-first-served mutex for tasks and threads alike: one holder at a time, waiters resumed in order.
/// Guards a database connection so that one transaction never interleaves with another on it.
///
/// A task waits suspended (``withGate(_:)``); a thread of its own waits blocked (``withGateBlocking(_:)``: the
/// SQLite log writer's queue, which must not hop to a task to write a batch).
final class AsyncGate: Sendable {
    private enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var busy = false
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Takes the gate if it is free.
    private func tryAcquire() -> Bool {
        state.withLock { state in
            if state.busy { return false }
            state.busy = true
            return true
        }
    }

    func acquire() async {
        if tryAcquire() { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let taken = state.withLock { state in
                if !state.busy {
                    state.busy = true
                    return true
                }
                state.waiters.append(.task(continuation))
                return false
            }
            if taken { continuation.resume() }
        }
    }

    /// Blocks the calling thread until it holds the gate. Never on a task's thread or an event loop.
    func acquireBlocking() {
        if tryAcquire() { return }
        let semaphore = DispatchSemaphore(value: 0)
        let taken = state.withLock { state in
            if !state.busy {
                state.busy = true
                return true
            }
            state.waiters.append(.thread(semaphore))
            return false
        }
        if !taken { semaphore.wait() }
    }

    /// Hands the gate to the first waiter, or frees it.
    func release() {
        let next = state.withLock { state -> Waiter? in
            if state.waiters.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        switch next {
        case .task(let continuation): continuation.resume()
        case .thread(let semaphore): semaphore.signal()
        case nil: break
        }
    }

    /// Runs `body` while holding the gate.
    func withGate<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    /// Runs `body` on the calling thread while holding the gate, blocking until it is free.
    func withGateBlocking<T>(_ body: () throws -> T) rethrows -> T {
        acquireBlocking()
        defer { release() }
        return try body()
    }
}
