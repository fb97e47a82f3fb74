import Dispatch
import Metrics
import Synchronization

/// Group commit: callers submit items and wait; one writer at a time takes everything queued (up to
/// `maximumBatch`) and writes it as one batch (one transaction, one flush), then resumes every caller of that
/// batch with its own outcome. Under load the next batch fills while the previous one is being written; when idle
/// an item is written at once.
///
/// The writer is a task (``init(maximumBatch:write:)`` on the shared pool; ``init(maximumBatch:executor:run:)``, on
/// the given executor when there is one — PostgreSQL's connections' event loop), or a serial dispatch queue that
/// writes each batch without suspending (``init(maximumBatch:queue:write:)``: a SQLite file's log writer, which so
/// costs no hop to a task and back per batch).
final class GroupCommitQueue<Item: Sendable>: Sendable {
    /// Writes a batch durably. Returns one outcome per item (`nil`: written); throwing fails the whole batch.
    typealias Write = @Sendable ([Item]) async throws -> [(any Error)?]
    /// One run of a task writer, from its start until nothing is queued: calls `batches` exactly once, with the
    /// ``Write`` of every batch of that run (PostgreSQL: on one connection leased for the run, not one per batch).
    /// A run that cannot set up its write calls `batches` with one that throws why: the batches queued fail.
    typealias Run = @Sendable (_ batches: @Sendable (@escaping Write) async -> Void) async -> Void
    /// ``Write`` for a writer that blocks its thread instead of suspending.
    typealias BlockingWrite = @Sendable ([Item]) throws -> [(any Error)?]

    private enum Writer {
        case task(Run, (any TaskExecutor)?)
        case queue(DispatchQueue, BlockingWrite)
    }

    /// Told an item's outcome once its batch is written (or has failed).
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    private struct State {
        /// The items queued and, at the same positions, their callers' completions (two arrays: a batch that takes
        /// everything queued takes both whole, without copying an item).
        var waiting: [Item] = []
        var completions: [Completion] = []
        /// A writer task is running.
        var flushing = false
        /// ``close()`` was called: new items are refused.
        var closed = false
        /// Callers of ``close()`` waiting for the writer to finish.
        var closers: [CheckedContinuation<Void, Never>] = []
        /// The sizes of the last two batches: whether records arrive together (load), when a start may wait.
        var recentBatches = (1, 1)
        /// The writer's start was handed to a caller (``submit(_:startWhenReady:completion:)``) and has not run.
        var startPending = false
        /// Items are being refused (``BatchRetry/maximumQueued``) since the writer last took a batch.
        var refusing = false

        /// Whether either of the last two batches held more than one record.
        var underLoad: Bool { recentBatches.0 > 1 || recentBatches.1 > 1 }
    }

    private enum SubmitOutcome {
        case refuse
        case refuseFull(queued: Int, first: Bool)
        case wait, startWriter, startWriterWhenReady
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let writer: Writer
    /// A failed batch's retries and the bound on what waits meanwhile; `nil`: a failed batch fails its callers at
    /// once, and nothing bounds the queue (its callers wait for their outcome, so they are bounded themselves).
    private let retry: BatchRetry?
    /// How long a task writer waits before it takes a batch, for more items to join it (`nil`: it takes what is
    /// queued at once). For callers that do not wait for their item (the decision log): fewer, larger transactions,
    /// each page they share written once a batch. Cut short once ``drain()`` or ``close()`` waits, or a whole
    /// batch is queued.
    private let gather: Duration?
    /// Items per batch written (docs/observability.md): near 1 when idle, growing with load.
    private let batchSize = Recorder(label: "offer_signer_store_commit_batch_size")

    /// A queue whose writer is a task on the shared pool.
    convenience init(maximumBatch: Int, write: @escaping Write) {
        self.init(maximumBatch: maximumBatch, executor: nil, run: { batches in await batches(write) })
    }

    /// A queue whose writer is a task on the shared pool, retrying a failed batch and bounding what is queued as
    /// `retry` says, and waiting `gather` before each batch (the decision log, whose callers do not wait).
    convenience init(maximumBatch: Int, retry: BatchRetry, gather: Duration? = nil, write: @escaping Write) {
        self.init(maximumBatch: maximumBatch, executor: nil, retry: retry, gather: gather, run: { batches in await batches(write) })
    }

    /// A queue whose writer is a task, on `executor` when given, each of its runs set up by `run`.
    init(maximumBatch: Int, executor: (any TaskExecutor)?, retry: BatchRetry? = nil, gather: Duration? = nil, run: @escaping Run) {
        self.maximumBatch = maximumBatch
        self.writer = .task(run, executor)
        self.retry = retry
        self.gather = gather
    }

    /// A queue whose writer runs on `queue` (serial), calling `write` there for each batch.
    init(maximumBatch: Int, queue: DispatchQueue, write: @escaping BlockingWrite) {
        self.maximumBatch = maximumBatch
        self.writer = .queue(queue, write)
        self.retry = nil
        self.gather = nil
    }

    /// Queues `item` and calls `completion` once it is written, with its own error or its batch's — without
    /// a task of the caller's (the event-loop signing path). `completion` runs on the writer's thread; a queue
    /// holding its ``BatchRetry/maximumQueued`` items refuses `item` at once (``GroupCommitQueueFull``).
    ///
    /// `startWhenReady`: when `item` finds no writer running while records arrive together (one of the last two
    /// batches held more than one), the writer's start is handed to it, to run once the caller has queued what else
    /// it has at hand (an event loop: at the end of its current tick, after the other requests it read in that
    /// tick) — they then share one batch instead of the first going alone and the rest waiting for its flush.
    /// Items queued meanwhile, by any caller, wait for that start. When idle (batches of one), or `nil`: the writer
    /// starts at once.
    func submit(_ item: Item, startWhenReady: StartWhenReady? = nil, completion: @escaping Completion) {
        let next = state.withLock { state -> SubmitOutcome in
            if state.closed { return .refuse }
            if let retry, state.waiting.count >= retry.maximumQueued {
                defer { state.refusing = true }
                return .refuseFull(queued: state.waiting.count, first: !state.refusing)
            }
            state.waiting.append(item)
            state.completions.append(completion)
            if state.flushing { return .wait }
            state.flushing = true
            guard startWhenReady != nil, state.underLoad else { return .startWriter }
            state.startPending = true
            return .startWriterWhenReady
        }
        switch next {
        case .refuse: completion(.failure(OfferStoreError(.unavailable, "The store is closed.")))
        case .refuseFull(let queued, let first):
            if first { retry?.full(queued) }
            completion(.failure(GroupCommitQueueFull(queued: queued)))
        case .wait: break
        case .startWriter: startWriter()
        case .startWriterWhenReady: startWhenReady? { self.startPendingWriter() }
        }
    }

    /// Starts the writer whose start was handed to a caller, unless ``close()`` started it already.
    private func startPendingWriter() {
        let pending = state.withLock { state in
            defer { state.startPending = false }
            return state.startPending
        }
        if pending { startWriter() }
    }

    private func startWriter() {
        switch writer {
        case .task(let run, let executor):
            // serves every caller: no task-locals of the first
            Task.detached(executorPreference: executor) { await run { write in await self.writeUntilEmpty(write) } }
        case .queue(let queue, let write):
            queue.async { self.writeUntilEmpty(write) }
        }
    }

    /// Refuses new items and returns once everything queued is written (or has failed).
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (idle, pending) = state.withLock { state -> (Bool, Bool) in
                state.closed = true
                if state.flushing { state.closers.append(continuation) }
                defer { state.startPending = false }
                return (!state.flushing, state.startPending)
            }
            // A start still with its caller (an event loop that stopped before its tick ended would never run it):
            // the records queued behind it are written now.
            if pending { startWriter() }
            if idle { continuation.resume() }
        }
    }

    /// Returns once everything queued so far is written (or has failed); new items are still taken.
    func drain() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (idle, pending) = state.withLock { state -> (Bool, Bool) in
                if state.flushing { state.closers.append(continuation) }
                defer { state.startPending = false }
                return (!state.flushing, state.startPending)
            }
            if pending { startWriter() }
            if idle { continuation.resume() }
        }
    }

    /// Whether no writer is running or waiting to start (tests).
    var isIdle: Bool { state.withLock { !$0.flushing } }

    private func writeUntilEmpty(_ write: Write) async {
        while true {
            await gathering()
            guard let (items, completions) = nextBatch() else { return }
            complete(completions, await attempts(of: items, write))
        }
    }

    /// Waits ``gather`` for more items, in slices of at most 5 ms: cut short once someone waits for the queue to
    /// empty (``drain()``, ``close()``) or a whole batch is queued.
    private func gathering() async {
        guard let gather else { return }
        let end = ContinuousClock.now + gather
        while state.withLock({ !$0.closed && $0.closers.isEmpty && $0.waiting.count < maximumBatch }) {
            let left = end - ContinuousClock.now
            guard left > .zero else { return }
            try? await Task.sleep(for: min(left, .milliseconds(5)))
        }
    }

    /// Writes `items`, and again after each of the retry's delays while it fails (none once the queue is closed).
    private func attempts(of items: [Item], _ write: Write) async -> Result<[(any Error)?], any Error> {
        var attempt = 1
        while true {
            do {
                return .success(try await write(items))
            } catch {
                guard let retry else { return .failure(error) }
                let closed = state.withLock { $0.closed }
                let delay = closed || attempt > retry.delays.count ? nil : retry.delays[attempt - 1]
                retry.failed(error, items.count, attempt, delay)
                guard let delay else { return .failure(error) }
                try? await Task.sleep(for: delay)
                attempt += 1
            }
        }
    }

    private func writeUntilEmpty(_ write: BlockingWrite) {
        while let (items, completions) = nextBatch() {
            complete(completions, Result { try write(items) })
        }
    }

    /// The next batch to write; `nil` when nothing is queued, and the writer is then done (the closers resumed).
    private func nextBatch() -> ([Item], [Completion])? {
        let (items, completions, closers) = state.withLock { state in
            let items: [Item]
            let completions: [Completion]
            if state.waiting.isEmpty {
                (items, completions) = ([], [])
            } else if state.waiting.count <= maximumBatch {
                // Everything queued (the common case): both arrays handed over whole, fresh ones with room for as
                // many left behind.
                items = state.waiting
                completions = state.completions
                state.waiting = []
                state.completions = []
                state.waiting.reserveCapacity(items.count)
                state.completions.reserveCapacity(items.count)
            } else {
                items = Array(state.waiting.prefix(maximumBatch))
                completions = Array(state.completions.prefix(maximumBatch))
                state.waiting.removeFirst(items.count)
                state.completions.removeFirst(items.count)
            }
            guard items.isEmpty else {
                state.refusing = false
                state.recentBatches = (items.count, state.recentBatches.0)
                return (items, completions, [CheckedContinuation<Void, Never>]())
            }
            state.flushing = false
            defer { state.closers = [] }
            return (items, completions, state.closers)
        }
        if items.isEmpty {
            for closer in closers { closer.resume() }
            return nil
        }
        batchSize.record(items.count)
        return (items, completions)
    }

    /// Tells each caller of a written (or failed) batch its outcome.
    private func complete(_ batch: [Completion], _ outcomes: Result<[(any Error)?], any Error>) {
        switch outcomes {
        case .success(let outcomes):
            for (index, completion) in batch.enumerated() {
                if index < outcomes.count, let error = outcomes[index] {
                    completion(.failure(error))
                } else {
                    completion(.success(()))
                }
            }
        case .failure(let error):
            for completion in batch { completion(.failure(error)) }
        }
    }
}
