import Foundation

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
