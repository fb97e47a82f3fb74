import Foundation
import OfferErrors

/// A configuration problem that stops start-up. The message names the variable, file or key identifier at
/// fault and what to do; it never contains key material or tokens.
public struct ConfigurationError: CodedError {
    /// `invalid_configuration`.
    public var code: Code
    /// What is wrong and what to do.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension ConfigurationError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidConfiguration = "invalid_configuration"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// A variable, file or key is missing or not acceptable: start-up stops (exit 78).
        public static let invalidConfiguration = Self(.invalidConfiguration)
    }
}

/// A dependency the service needs at start-up (the database) cannot be reached in time. The process exits
/// with status 69 (EX_UNAVAILABLE); the message names the variable and what to check, never a password.
public struct DependencyUnavailableError: CodedError {
    /// `dependency_unavailable`.
    public var code: Code
    /// What is unavailable and what to check.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension DependencyUnavailableError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case dependencyUnavailable = "dependency_unavailable"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The database did not answer in time at start-up (exit 69).
        public static let dependencyUnavailable = Self(.dependencyUnavailable)
    }
}
