import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// Where the work runs that signing must not feel: outcome reports, policy dry-runs, notification backfills
/// (docs/architecture.md "Background work"). One thread of its own at the operating system's lowest priority
/// (nice 19 on Linux): it never runs on an event loop or in the cooperative pool that serve requests, and when
/// signing needs the cores the scheduler gives them to signing, so a long replay slows down instead of signing.
///
/// The lane is a `TaskExecutor`: ``run(_:)`` runs its body's nonisolated code on the lane's thread (Swift's task
/// executor preference), yielding it at every `await`. A SQLite file store reads what the body asks for on a
/// connection of its own whose statements run on the same thread (``SQLiteBackend``), so the report's or replay's
/// SQL, its decoding and its arithmetic are all the lane's; PostgreSQL does the SQL in its own processes.
///
/// ## Usage
///
/// ```swift
/// let report = try await BackgroundLane.shared.run {
///     try await store.outcomeReport(query)        // read on the lane's connection, decoded on its thread
/// }
/// ```
///
/// Work on the lane should still come in slices (`await Task.yield()` between pages), so that other background
/// work queued behind it gets its turn.
public final class BackgroundLane: TaskExecutor, Sendable {
    /// The process's lane (one per replica).
    public static let shared = BackgroundLane()

    /// The nice value the lane's thread runs at (19, the lowest priority; 0 is the default).
    public static let niceness: Int32 = 19

    /// The lane's thread, as a pool of one: the executor's jobs and a SQLite file's background statements.
    let threadPool: NIOThreadPool

    /// Set on the lane's thread only.
    private static let marker = ThreadSpecificVariable<Marker>()
    private final class Marker: Sendable {}

    /// Whether the calling task runs its work on the lane (inside ``run(_:)``): a SQLite file store then reads on
    /// its background connection.
    @TaskLocal static var isActive = false

    private init() {
        threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        threadPool.submit { _ in
            Self.marker.currentValue = Marker()
            #if os(Linux)
            // On Linux the nice value is the calling thread's own (PRIO_PROCESS with 0: this thread only). Raising
            // it needs no privilege; if it fails the lane still keeps this work off the request threads.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.niceness)
            #endif
        }
    }

    /// Whether the calling code runs on the lane's thread.
    public var isCurrentThread: Bool { Self.marker.currentValue != nil }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        threadPool.submit { _ in job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Runs `body` on the lane: its nonisolated code on the lane's thread, its SQLite reads on the background
    /// connection. What `body` awaits elsewhere (a write, a lock) runs where it always does.
    public func run<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await withTaskExecutorPreference(self) {
            await Self.$isActive.withValue(true) {
                do throws(Failure) {
                    return .success(try await body())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    /// Runs `body` off the lane when called on it — on the shared pool, at the requests' priority, and reading
    /// where requests read: for what holds a lock that signing waits for (a write transaction, SQLite's write
    /// gate), which must not wait for the lane's thread while signing keeps the cores busy. Elsewhere it only
    /// runs `body`.
    public static func leaving<T, Failure: Error>(_ body: () async throws(Failure) -> T) async throws(Failure) -> T {
        guard isActive else { return try await body() }
        let result: Result<T, Failure> = await withTaskExecutorPreference(globalConcurrentExecutor) {
            await $isActive.withValue(false) {
                do throws(Failure) {
                    return .success(try await body())
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }
}
