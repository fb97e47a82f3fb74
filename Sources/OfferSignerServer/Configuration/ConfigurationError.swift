import Foundation
import OfferErrors

/// A configuration problem that stops start-up. The message names the variable, file or key identifier at
/// fault and what to do; it never contains key material or tokens.
public struct ConfigurationError: CodedError {
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<ConfigurationError>
    /// `invalid_configuration`.
    public var code: Code
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ message: String, code: Code = .invalidConfiguration) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension ErrorCode where Domain == ConfigurationError {
    /// A variable, file or key is missing or not acceptable: start-up stops (exit 78).
    public static var invalidConfiguration: Self { Self("invalid_configuration") }
}

/// A dependency the service needs at start-up (the database) cannot be reached in time. The process exits
/// with status 69 (EX_UNAVAILABLE); the message names the variable and what to check, never a password.
public struct DependencyUnavailableError: CodedError {
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<DependencyUnavailableError>
    /// `dependency_unavailable`.
    public var code: Code = .dependencyUnavailable
    /// What is unavailable and what to check.
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

extension ErrorCode where Domain == DependencyUnavailableError {
    /// The database did not answer in time at start-up (exit 69).
    public static var dependencyUnavailable: Self { Self("dependency_unavailable") }
}
