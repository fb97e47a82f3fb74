/// Thrown inside the client when a deadline passes; mapped to ``AppStoreServerAPIError/Code/appStoreUnavailable``.
struct DeadlineExceeded: Error {}

/// Runs `operation`, cancelling it and throwing ``DeadlineExceeded`` if it has not ended by `deadline`.
///
/// `operation` must honour cancellation (AsyncHTTPClient's requests and body streams do).
func withDeadline<T: Sendable>(
    _ deadline: ContinuousClock.Instant,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(until: deadline, clock: .continuous)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else { throw DeadlineExceeded() }
        return value
    }
}
