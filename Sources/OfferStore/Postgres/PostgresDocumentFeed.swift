import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Other processes' changes to the store's documents (key states), pushed by PostgreSQL's LISTEN/NOTIFY: every
/// replica sharing the database hears a change as it commits, instead of at its next poll.
///
/// ``SQLOfferStore/replaceDocument(named:version:text:)`` sends `pg_notify('offer_signer_documents', name)` in the
/// transaction that changes the document, so the notification is delivered at its commit, never before. Here a
/// client of its own (one connection, apart from the pool the requests use) listens on that channel and hands each
/// notification's document name to every ``changes()`` stream. The connection is opened at the first
/// ``changes()`` (a tool that never asks opens none) and re-established after a drop, one second apart; each time
/// it is (re-)established every stream gets ``anyDocument``: what changed while no one listened is read again.
final class PostgresDocumentFeed: Sendable {
    /// The channel document changes are notified on.
    static let channel = "offer_signer_documents"
    /// What a stream gets when the listener (re)connects: any document may have changed.
    static let anyDocument = "*"

    private let configuration: PostgresClient.Configuration
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var streams: [UUID: AsyncStream<String>.Continuation] = [:]
        var listening: Task<Void, Never>?
        var started = false
        var closed = false
    }

    init(configuration: PostgresClient.Configuration, logger: Logger) {
        var configuration = configuration
        configuration.options.maximumConnections = 1
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(2)
        self.configuration = configuration
        self.logger = logger
    }

    /// The names of documents changed by any process sharing the database (this one included), as they commit;
    /// ``anyDocument`` when the listener (re)connects.
    func changes() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(64))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.streams.removeValue(forKey: id) } }
        let (closed, start) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (true, false) }
            state.streams[id] = continuation
            defer { state.started = true }
            return (false, !state.started)
        }
        if closed { continuation.finish() }
        if start {
            let task = Task { [configuration, logger] in
                await Self.listen(configuration: configuration, logger: logger, deliver: { [weak self] in self?.deliver($0) })
            }
            let cancel = state.withLock { state -> Bool in
                state.listening = task
                return state.closed
            }
            if cancel { task.cancel() }
        }
        return stream
    }

    private func deliver(_ name: String) {
        for continuation in state.withLock({ Array($0.streams.values) }) { continuation.yield(name) }
    }

    /// Stops listening and ends every stream.
    func close() {
        let (task, streams) = state.withLock { state in
            state.closed = true
            defer {
                state.streams = [:]
                state.listening = nil
            }
            return (state.listening, Array(state.streams.values))
        }
        task?.cancel()
        for continuation in streams { continuation.finish() }
    }

    /// Listens until cancelled, reconnecting one second after a drop.
    private static func listen(configuration: PostgresClient.Configuration, logger: Logger, deliver: @escaping @Sendable (String) -> Void) async {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        await withDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            var failures = 0
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            failures = 0
                            deliver(anyDocument)
                            for try await notification in notifications { deliver(notification.payload) }
                        }
                    }
                } catch {
                    if Task.isCancelled { break }
                    failures += 1
                    // Once per outage, not once a second.
                    if failures == 1 {
                        logger.warning(
                            """
                            cannot listen for other replicas' changes to key states (the database did not answer); retrying every second, and \
                            the 5-second poll goes on
                            """
                        )
                    }
                }
                try? await Task.sleep(for: .seconds(1))
            }
            group.cancelAll()
        }
    }
}
