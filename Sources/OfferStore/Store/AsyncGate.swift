import Dispatch
import Synchronization

/// A first-come-first-served mutex for tasks and threads alike: one holder at a time (or `permits` holders: a pool
/// of that many connections), waiters resumed in order. Guards a database connection so that one transaction never
/// interleaves with another on it.
///
/// A task waits suspended (``withGate(within:_:)``), for a bounded time if it says so; a thread of its own waits
/// blocked (``withGateBlocking(_:)``: the SQLite log writer's queue, which must not hop to a task to write a batch).
final class AsyncGate: Sendable {
    private enum Waiter {
        /// A task, resumed with `true` when it holds the gate, `false` when its wait ran out.
        case task(CheckedContinuation<Bool, Never>, id: UInt64)
        case thread(DispatchSemaphore)
    }

    private struct State {
        var free: Int
        var waiters: [Waiter] = []
        var lastID: UInt64 = 0
        /// Tasks whose wait ran out before they were queued.
        var expired: Set<UInt64> = []
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
        _ = await acquire(within: nil)
    }

    /// Waits for the gate, at most `limit` (`nil`: as long as it takes). - Returns: whether it holds the gate.
    func acquire(within limit: Duration?) async -> Bool {
        if take() { return true }
        let id = state.withLock { state in
            state.lastID &+= 1
            return state.lastID
        }
        let clock = limit.map { limit in
            Task {
                try? await Task.sleep(for: limit)
                if !Task.isCancelled { self.expire(id) }
            }
        }
        let holds = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let outcome = state.withLock { state -> Bool? in
                if state.expired.remove(id) != nil { return false }
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiters.append(.task(continuation, id: id))
                return nil
            }
            if let outcome { continuation.resume(returning: outcome) }
        }
        if let clock {
            clock.cancel()
            await clock.value
            state.withLock { _ = $0.expired.remove(id) }  // a clock that ran out as the gate was taken
        }
        return holds
    }

    /// Ends the wait of the task `id`: resumed with `false` if it is queued, else marked so that it is not.
    private func expire(_ id: UInt64) {
        let waiting = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            let index = state.waiters.firstIndex { waiter in
                if case .task(_, let queued) = waiter { return queued == id }
                return false
            }
            guard let index else {
                state.expired.insert(id)
                return nil
            }
            guard case .task(let continuation, _) = state.waiters.remove(at: index) else { return nil }
            return continuation
        }
        waiting?.resume(returning: false)
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
        case .task(let continuation, _): continuation.resume(returning: true)
        case .thread(let semaphore): semaphore.signal()
        case nil: break
        }
    }

    /// Runs `body` while holding the gate, waiting for it at most `limit` (`nil`: as long as it takes).
    /// - Throws: ``AsyncGateTimedOut`` when the wait ran out (`body` did not run); what `body` throws.
    func withGate<T: Sendable>(within limit: Duration? = nil, _ body: @Sendable () async throws -> T) async throws -> T {
        guard await acquire(within: limit) else { throw AsyncGateTimedOut() }
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

/// A task's wait for an ``AsyncGate`` ran out.
struct AsyncGateTimedOut: Error {}
