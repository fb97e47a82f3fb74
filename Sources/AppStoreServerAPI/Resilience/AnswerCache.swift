/// Answers by key, fresh for a time, with single flight: while one request for a key is under way, every other
/// caller for that key waits for its answer instead of asking again.
///
/// Correct under actor re-entrancy: looking up a key, starting a flight and registering a waiter happen in one
/// actor turn with no suspension in between, so two callers can never both start a flight for one key. The flight
/// runs in its own task and hands its result back to the actor, which resumes every waiter once; a waiter whose
/// deadline passes, or whose task is cancelled, is resumed alone with an error and the flight goes on for the rest.
/// Failures are not cached. At most `capacity` answers are kept: expired ones go first, then the oldest.
actor AnswerCache<Value: Sendable> {
    /// What the cache did for a call, for metrics.
    enum Event { case hit, joined, started }

    private struct Flight {
        let id: UInt64
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct Waiter {
        let continuation: CheckedContinuation<Value, any Error>
        let timer: Task<Void, Never>
    }

    private enum Entry {
        case inFlight(Flight)
        case ready(Value, expires: ContinuousClock.Instant, sequence: UInt64)
    }

    private let timeToLive: Duration
    private let capacity: Int
    private var entries: [String: Entry] = [:]
    private var readyCount = 0
    private var counter: UInt64 = 0

    /// - Parameters:
    ///   - timeToLive: How long an answer is served; `.zero` keeps none (single flight still applies).
    ///   - capacity: The most answers kept.
    init(timeToLive: Duration, capacity: Int) {
        self.timeToLive = timeToLive
        self.capacity = max(0, capacity)
    }

    /// The answer for `key`: a fresh cached one, the one a flight under way brings, or one `operation` fetches now.
    ///
    /// - Parameters:
    ///   - key: What is asked.
    ///   - deadline: When this caller stops waiting (the flight it joined may go on for others).
    ///   - timeoutError: Thrown to this caller at `deadline`.
    ///   - cancellationError: Thrown to this caller when its task is cancelled.
    ///   - event: Told whether the answer was a hit, a join or a new flight.
    ///   - operation: Fetches the answer; it must end by itself (it carries the first caller's deadline).
    func value(
        for key: String,
        deadline: ContinuousClock.Instant,
        timeoutError: any Error,
        cancellationError: any Error,
        event: (Event) -> Void,
        operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        switch entries[key] {
        case .ready(let value, let expires, _) where expires > .now:
            event(.hit)
            return value
        case .inFlight:
            event(.joined)
        case .ready, nil:
            event(.started)
            if case .ready = entries[key] { readyCount -= 1 }
            counter += 1
            let flightID = counter
            entries[key] = .inFlight(Flight(id: flightID))
            Task {
                let result: Result<Value, any Error>
                do {
                    result = .success(try await operation())
                } catch {
                    result = .failure(error)
                }
                self.finish(key: key, flightID: flightID, result: result)
            }
        }
        counter += 1
        let waiterID = counter
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                // Runs in this actor's turn: the flight registered above (or joined) is still in flight.
                guard case .inFlight(var flight) = entries[key] else {
                    // Not reached while the turn is not interrupted; if it were, take what the flight left.
                    if case .ready(let value, _, _) = entries[key] {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: cancellationError)
                    }
                    return
                }
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    guard !Task.isCancelled else { return }
                    self.resume(key: key, waiterID: waiterID, with: .failure(timeoutError))
                }
                flight.waiters[waiterID] = Waiter(continuation: continuation, timer: timer)
                entries[key] = .inFlight(flight)
            }
        } onCancel: {
            Task { await self.resume(key: key, waiterID: waiterID, with: .failure(cancellationError)) }
        }
    }

    /// Resumes one waiter (deadline passed, task cancelled); the flight goes on.
    private func resume(key: String, waiterID: UInt64, with result: Result<Value, any Error>) {
        guard case .inFlight(var flight) = entries[key], let waiter = flight.waiters.removeValue(forKey: waiterID) else {
            return
        }
        entries[key] = .inFlight(flight)
        waiter.timer.cancel()
        waiter.continuation.resume(with: result)
    }

    /// Ends a flight: keeps a success for the time to live, resumes every waiter.
    private func finish(key: String, flightID: UInt64, result: Result<Value, any Error>) {
        guard case .inFlight(let flight) = entries[key], flight.id == flightID else { return }
        entries[key] = nil
        if case .success(let value) = result, timeToLive > .zero, capacity > 0 {
            makeRoom()
            counter += 1
            entries[key] = .ready(value, expires: .now + timeToLive, sequence: counter)
            readyCount += 1
        }
        for waiter in flight.waiters.values {
            waiter.timer.cancel()
            waiter.continuation.resume(with: result)
        }
    }

    /// Drops expired answers, then the oldest, until one more fits.
    private func makeRoom() {
        guard readyCount >= capacity else { return }
        let now = ContinuousClock.now
        var ready: [(key: String, sequence: UInt64)] = []
        for (key, entry) in entries {
            guard case .ready(_, let expires, let sequence) = entry else { continue }
            if expires <= now {
                entries[key] = nil
                readyCount -= 1
            } else {
                ready.append((key, sequence))
            }
        }
        guard readyCount >= capacity else { return }
        // Drop a tenth at once (at least one), so a full cache does not scan on every insert.
        let excess = readyCount - capacity + max(1, capacity / 10)
        for victim in ready.sorted(by: { $0.sequence < $1.sequence }).prefix(excess) {
            entries[victim.key] = nil
            readyCount -= 1
        }
    }
}
