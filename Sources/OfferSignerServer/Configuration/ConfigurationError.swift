import Foundation
import Synchronization

/// A configuration problem that stops start-up. The message names the variable, file or key identifier at
/// fault and what to do; it never contains key material or tokens.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ message: String) { self.message = message }

    public var description: String { message }

    public var errorDescription: String? { message }
}

/// A dependency the service needs at start-up (the database) cannot be reached in time. The process exits
/// with status 69 (EX_UNAVAILABLE); the message names the variable and what to check, never a password.
public struct DependencyUnavailableError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What is unavailable and what to check.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
    public var errorDescription: String? { message }
}

/// Runs `operation`, giving up after `timeout`: the result, or `nil` when the time ran out first. An operation
/// that ignores cancellation (a connection pool retrying a dead host) is left running; the caller is not kept
/// waiting for it.
func withDeadline<T: Sendable>(_ timeout: Duration, _ operation: @escaping @Sendable () async throws -> T) async throws -> T? {
    let outcome = FirstOutcome<T?>()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T?, any Error>) in
        outcome.set(continuation)
        let work = Task {
            do { outcome.finish(.success(try await operation())) } catch { outcome.finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: timeout)
            outcome.finish(.success(nil))
            work.cancel()
        }
    }
}

/// Resumes a continuation with the first outcome only.
private final class FirstOutcome<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    func finish(_ result: Result<T, any Error>) {
        continuation.withLock { pending in
            pending?.resume(with: result)
            pending = nil
        }
    }
}
