import Dispatch
import Synchronization

/// A first-come-first-served mutex for tasks and threads alike: one holder at a time (or `permits` holders: a pool
/// of that many connections), waiters resumed in order. Guards a database connection so that one transaction never
/// interleaves with another on it.
///
/// A task waits suspended (``withGate(_:)``); a thread of its own waits blocked (``withGateBlocking(_:)``: the
/// SQLite log writer's queue, which must not hop to a task to write a batch).
final class AsyncGate: Sendable {
    private enum Waiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var free: Int
        var waiters: [Waiter] = []
    }

    private let state: Mutex<State>

    /// - Parameter permits: how many may hold the gate at once.
    init(permits: Int = 1) {
        state = Mutex(State(free: max(1, permits)))
    }

    /// Takes the gate if it is free; otherwise queues `waiter` (when given), to be woken when its turn comes.
    private func take(orQueue waiter: Waiter? = nil) -> Bool {
        state.withLock { state in
            if state.free > 0 {
                state.free -= 1
                return true
            }
            if let waiter { state.waiters.append(waiter) }
            return false
        }
    }

    func acquire() async {
        if take() { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if take(orQueue: .task(continuation)) { continuation.resume() }
        }
    }

    /// Blocks the calling thread until it holds the gate. Never on a task's thread or an event loop.
    func acquireBlocking() {
        if take() { return }
        let semaphore = DispatchSemaphore(value: 0)
        if !take(orQueue: .thread(semaphore)) { semaphore.wait() }
    }

    /// Hands the holder's place to the first waiter, or frees it.
    func release() {
        let next = state.withLock { state -> Waiter? in
            if state.waiters.isEmpty {
                state.free += 1
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
