import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Reloads the keys on SIGHUP (`kill -HUP <pid>`, `systemctl reload offer-signer`).
public struct SIGHUPKeyReloader: Service {
    let manager: KeyManager

    public init(manager: KeyManager) {
        self.manager = manager
    }

    public func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            _ = try? await manager.reload(reason: "SIGHUP")
        }
    }
}

/// Watches `OFFER_SIGNER_KEYS_DIR` and reloads the keys when it changes.
///
/// Polls (no inotify dependency, works on every file system): every `interval` it takes a snapshot of the
/// folder — each entry's name, where its symlinks lead, size and modification time — and reloads when the
/// snapshot differs. A Kubernetes Secret volume updates by pointing its `..data` symlink at a new
/// timestamped folder in one rename; the snapshot follows `..data`, so the swap is seen as one change,
/// never half of one.
public struct KeyDirectoryWatcher: Service {
    let directory: String
    let interval: Duration
    let manager: KeyManager
    let initialSnapshot: [String]

    /// Creates the watcher. The folder's state is taken now, so that a change between the keys' first load
    /// and the start of ``run()`` is not missed.
    public init(directory: String, interval: Duration = .seconds(2), manager: KeyManager) {
        self.directory = directory
        self.interval = interval
        self.manager = manager
        self.initialSnapshot = Self.snapshot(of: directory)
    }

    public func run() async throws {
        var last = initialSnapshot
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // Woken at once by a graceful shutdown (SIGTERM), so that stopping never waits for the interval.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            let current = Self.snapshot(of: directory)
            if current != last {
                last = current
                _ = try? await manager.reload(reason: "keys directory changed")
            }
        }
    }

    /// What the folder looks like now.
    static func snapshot(of directory: String) -> [String] {
        let manager = FileManager.default
        guard let names = try? manager.contentsOfDirectory(atPath: directory) else { return ["<unreadable>"] }
        return names.sorted().map { name in
            let path = (directory as NSString).appendingPathComponent(name)
            let link = (try? manager.destinationOfSymbolicLink(atPath: path)) ?? ""
            let resolved = (path as NSString).resolvingSymlinksInPath
            let attributes = try? manager.attributesOfItem(atPath: resolved)
            let size = (attributes?[.size] as? NSNumber)?.int64Value ?? -1
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            return "\(name)|\(link)|\(resolved)|\(size)|\(modified)"
        }
    }
}

/// Applies key states that another replica saved in the shared store: at once when the store pushes the change
/// (PostgreSQL's LISTEN/NOTIFY: `changes`), and every `interval` in any case (the backstop, should a notification
/// be lost while the listener reconnects).
public struct KeyStateRefresher: Service {
    let manager: KeyManager
    let interval: Duration
    let changes: (@Sendable () -> AsyncStream<String>)?
    let documentName: String

    /// - Parameters:
    ///   - changes: the names of documents other processes change, as they commit (`"*"`: any may have changed).
    ///   - documentName: the document the key states are kept in.
    public init(
        manager: KeyManager,
        interval: Duration = .seconds(5),
        changes: (@Sendable () -> AsyncStream<String>)? = nil,
        documentName: String = "key-states"
    ) {
        self.manager = manager
        self.interval = interval
        self.changes = changes
        self.documentName = documentName
    }

    public func run() async throws {
        await followDocument(named: documentName, changes: changes, every: interval) { [manager] in await manager.refreshStates() }
    }
}

/// Runs `refresh` each time `changes` names the shared document `documentName` (or `"*"`: any may have changed),
/// and every `interval` in any case (the backstop, should a notification be lost while the listener reconnects),
/// until the task is cancelled or the service shuts down gracefully. The loop of every process that follows a
/// document other replicas change (key states, the fleet's policy).
public func followDocument(
    named documentName: String,
    changes: (@Sendable () -> AsyncStream<String>)?,
    every interval: Duration,
    refresh: @escaping @Sendable () async -> Void
) async {
    await withDiscardingTaskGroup { group in
        if let changes {
            group.addTask {
                // A change's read starts as its notification arrives, not after the read of the one before (an
                // activation and the revoke that follows it): `refresh` applies only a version newer than the one
                // served, so reads that overlap never step back.
                let schedule = RefreshSchedule.Shared()
                await withDiscardingTaskGroup { refreshes in
                    for await name in changes() where name == documentName || name == "*" {
                        guard schedule.state.withLock({ $0.notified() }) else { continue }
                        refreshes.addTask {
                            repeat { await refresh() } while schedule.state.withLock { $0.finished() }
                        }
                    }
                }
            }
        }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            // Woken at once by a graceful shutdown (SIGTERM), so that stopping never waits for the interval.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            await refresh()
        }
        group.cancelAll()
    }
}

/// When a followed document is read again: at once for each notification, up to ``maximumRunning`` reads at a
/// time; a notification that finds that many running makes the next one to finish read once more (it starts after
/// the notification, so it sees the change). Events in, decisions out; ``followDocument(named:changes:every:refresh:)``
/// executes them.
struct RefreshSchedule: Sendable {
    /// Reads at a time.
    let maximumRunning: Int
    private(set) var running = 0
    private var again = false

    init(maximumRunning: Int = 2) {
        self.maximumRunning = max(maximumRunning, 1)
    }

    /// A schedule the notification loop and its reads share.
    final class Shared: Sendable {
        let state = Mutex(RefreshSchedule())
    }

    /// A notification arrived: whether to start a read now.
    mutating func notified() -> Bool {
        guard running < maximumRunning else {
            again = true
            return false
        }
        running += 1
        return true
    }

    /// A read ended: whether it must read once more (a notification arrived while the maximum ran).
    mutating func finished() -> Bool {
        if again {
            again = false
            return true
        }
        running -= 1
        return false
    }
}
