import Foundation
public import OfferErrors

/// Why an experiment computation refused its input: the statistics never trap on values from outside (a policy file,
/// the store, a request); they throw this instead.
///
/// Compare ``code`` in tests and map it where the error leaves the application; ``message`` says what is wrong for
/// humans and never carries a customer identifier.
public struct ExperimentStatisticsError: CodedError, Hashable {
    public typealias Code = ErrorCode<ExperimentStatisticsError>

    /// What went wrong.
    public let code: Code
    /// What is wrong and what to do, for humans.
    public let message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode<ExperimentStatisticsError> {
    /// No variants, or more variants than the computation takes.
    public static let noVariants = Self("no_variants")
    /// A weight is zero or negative.
    public static let weightNotPositive = Self("weight_not_positive")
    /// The weights add up to more than an `Int` holds.
    public static let weightsOverflow = Self("weights_overflow")
    /// Two variants have the same name.
    public static let duplicateVariant = Self("duplicate_variant")
    /// An experiment identifier is empty or contains the separator byte (NUL).
    public static let invalidExperimentIdentifier = Self("invalid_experiment_identifier")
    /// A count is negative, or successes exceed trials.
    public static let invalidCount = Self("invalid_count")
    /// Observed counts and weights differ in number.
    public static let countMismatch = Self("count_mismatch")
    /// A rate, a lift, α or power is outside its range (or not finite).
    public static let parameterOutOfRange = Self("parameter_out_of_range")
}
