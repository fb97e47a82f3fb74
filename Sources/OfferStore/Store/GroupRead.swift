import Synchronization

/// Reads asked for at once, made together: the group commit's idea (``GroupCommitQueue``) for reads. A read asked
/// for while fewer than `maxInFlight` batches are in flight is made at once, alone, by its caller; one asked for
/// while they all are waits for the next batch, which takes every read waiting then (at most `maxBatch`) in one
/// call of `read` — one statement, one round trip, however many customers it reads. So a read waits for nothing
/// when reads are few, and many reads at once cost a few round trips instead of one each.
///
/// The decisions under a policy on PostgreSQL read each customer's facts and signatures this way
/// (``PostgresCustomerDecisions``): each of them alone was a round trip of its own, and their per-statement cost —
/// the driver's, the socket's, the server's — was most of what a decision cost beyond its signature.
final class GroupRead<Request: Sendable, Answer: Sendable>: Sendable {
    /// Reads a batch: one answer per request, in their order (a batch whose answers do not match fails whole).
    typealias Read = @Sendable ([Request]) async throws -> [Answer]
    /// Runs its body — batches read one after another — with the `Read` of one resource held across them
    /// (PostgreSQL: one connection of the pool, leased once for several batches instead of once each).
    /// A batch's failure is thrown out of the body once its callers have it, so the hold sees its resource fail.
    typealias Holding = @Sendable (_ batches: @Sendable (_ read: Read) async throws -> Void) async throws -> Void

    private struct Waiting: Sendable {
        var request: Request
        var continuation: CheckedContinuation<Answer, any Error>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        var inFlight = 0
        var largestBatch = 0

        /// Takes a batch's slot if one of `maxInFlight` is free.
        mutating func takeSlot(of maxInFlight: Int) -> Bool {
            guard inFlight < maxInFlight else { return false }
            inFlight += 1
            return true
        }
    }

    private let state = Mutex(State())
    private let maxInFlight: Int
    private let maxBatch: Int
    private let read: Read
    /// Where the task that reads waiting requests runs (`nil`: the shared pool).
    private let executor: (any TaskExecutor)?
    /// How a drain holds one resource across its batches (`nil`: each batch through `read`).
    private let holding: Holding?
    /// The most batches a drain reads on one hold before it lets the resource go (and holds it again if reads
    /// still wait).
    static var batchesPerHold: Int { 32 }
    /// How long a hold starts new batches: past it the resource is let go after the batch under way, so a hold
    /// stays short beside the pool's lease clocks (a lease holding its connection half of its wait limit sets off a
    /// check of the database) and each batch's success counts soon.
    static var holdBudget: Duration { .milliseconds(50) }

    /// - Parameters:
    ///   - maxInFlight: how many batches at most are read at once (each takes a connection).
    ///   - maxBatch: how many requests at most one batch reads.
    ///   - executor: where the task that reads the waiting requests runs (PostgreSQL: its connections' event loop,
    ///     so the batch's statement is sent and answered without a hop to the shared pool); `nil`: the shared pool.
    ///   - holding: how the reads that waited hold one resource across their batches (at most
    ///     ``batchesPerHold`` a hold); `nil`: each batch through `read`. A read alone, by its caller, uses `read`.
    ///   - read: reads a batch.
    init(maxInFlight: Int = 2, maxBatch: Int = 256, executor: (any TaskExecutor)? = nil, holding: Holding? = nil, read: @escaping Read) {
        precondition(maxInFlight > 0 && maxBatch > 0)
        self.maxInFlight = maxInFlight
        self.maxBatch = maxBatch
        self.executor = executor
        self.holding = holding
        self.read = read
    }

    /// The most requests one batch has read so far (tests: reads asked for at once went together).
    var largestBatch: Int { state.withLock { $0.largestBatch } }

    /// The answer to `request`: read at once when a batch can start, else with the next batch.
    func answer(_ request: Request) async throws -> Answer {
        let leads = state.withLock { state in
            guard state.takeSlot(of: maxInFlight) else { return false }
            state.largestBatch = max(state.largestBatch, 1)
            return true
        }
        guard leads else {
            return try await withCheckedThrowingContinuation { continuation in
                let starts = state.withLock { state in
                    state.waiting.append(Waiting(request: request, continuation: continuation))
                    // A batch ended between the check above and now: no batch would take this one.
                    return state.takeSlot(of: maxInFlight)
                }
                if starts { Task(executorPreference: executor) { await self.drain() } }
            }
        }
        // Alone, by its caller: no task, no hop.
        let answer: Result<Answer, any Error>
        do {
            answer = .success(try await answers([request], with: read)[0])
        } catch {
            answer = .failure(error)
        }
        // Reads that came meanwhile are read by a task of their own, so this caller answers now.
        endBatch()
        return try answer.get()
    }

    /// Gives a batch's slot back, or to a drain of the reads waiting.
    private func endBatch() {
        let starts = state.withLock { state in
            state.inFlight -= 1
            // A read that waited while the last slot was taken and saw no slot free.
            guard !state.waiting.isEmpty else { return false }
            state.inFlight += 1
            return true
        }
        if starts { Task(executorPreference: executor) { await self.drain() } }
    }

    /// Reads the waiting requests batch after batch, holding one slot, until none wait: through `read`, or on one
    /// hold of ``holding`` for up to ``batchesPerHold`` batches at a time.
    private func drain() async {
        guard let holding else {
            while let batch = nextBatch() { _ = await answer(batch, with: read) }
            return
        }
        while true {
            // Set by the body: it ran; it found no read waiting (the slot then given back).
            let ran = Atomic<Bool>(false)
            let ended = Atomic<Bool>(false)
            var failure: (any Error)?
            do {
                try await holding { read in
                    ran.store(true, ordering: .relaxed)
                    let start = ContinuousClock.now
                    for _ in 0..<Self.batchesPerHold where ContinuousClock.now - start < Self.holdBudget {
                        guard let batch = self.nextBatch() else {
                            ended.store(true, ordering: .relaxed)
                            return
                        }
                        // A failed batch ends the hold, which sees the error: the resource may be what failed.
                        if let error = await self.answer(batch, with: read) { throw error }
                    }
                }
            } catch {
                failure = error
            }
            if ended.load(ordering: .relaxed) { return }
            // The body ran (its batches answered, a failed one with its error): the reads still waiting go on a new hold.
            if ran.load(ordering: .relaxed) { continue }
            // No hold at all (no connection within the limit, the store closed): the next batch fails with its error.
            guard let batch = nextBatch() else { return }
            let error = failure ?? OfferStoreError(.unavailable, "A batched read found nothing to read on.")
            for waiting in batch { waiting.continuation.resume(throwing: error) }
        }
    }

    /// The next batch of waiting reads (at most `maxBatch`); `nil`, with the slot given back, when none wait.
    private func nextBatch() -> [Waiting]? {
        state.withLock { state in
            let taken = Array(state.waiting.prefix(maxBatch))
            state.waiting.removeFirst(taken.count)
            state.largestBatch = max(state.largestBatch, taken.count)
            if taken.isEmpty { state.inFlight -= 1 }
            return taken.isEmpty ? nil : taken
        }
    }

    /// Reads `batch` and answers its callers; the error they got, if the read failed.
    private func answer(_ batch: [Waiting], with read: Read) async -> (any Error)? {
        do {
            let answers = try await answers(batch.map(\.request), with: read)
            for (waiting, answer) in zip(batch, answers) { waiting.continuation.resume(returning: answer) }
            return nil
        } catch {
            for waiting in batch { waiting.continuation.resume(throwing: error) }
            return error
        }
    }

    /// `read` of a batch, one answer per request (a batch whose answers do not match fails whole).
    private func answers(_ requests: [Request], with read: Read) async throws -> [Answer] {
        let answers = try await read(requests)
        guard answers.count == requests.count else {
            throw OfferStoreError(.unavailable, "A batched read gave \(answers.count) answers for \(requests.count) requests.")
        }
        return answers
    }
}
