import Foundation
public import OfferErrors

/// Why an experiment computation refused its input: the statistics never trap on values from outside (a policy file,
/// the store, a request); they throw this instead.
///
/// Compare ``code`` in tests and map it where the error leaves the application; ``message`` says what is wrong for
/// humans and never carries a customer identifier.
public struct ExperimentStatisticsError: CodedError, Hashable {

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

extension ExperimentStatisticsError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case noVariants = "no_variants"
            case weightNotPositive = "weight_not_positive"
            case weightsOverflow = "weights_overflow"
            case duplicateVariant = "duplicate_variant"
            case invalidExperimentIdentifier = "invalid_experiment_identifier"
            case invalidCount = "invalid_count"
            case countMismatch = "count_mismatch"
            case parameterOutOfRange = "parameter_out_of_range"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// No variants, or more variants than the computation takes.
        public static let noVariants = Self(.noVariants)

        /// A weight is zero or negative.
        public static let weightNotPositive = Self(.weightNotPositive)

        /// The weights add up to more than an `Int` holds.
        public static let weightsOverflow = Self(.weightsOverflow)

        /// Two variants have the same name.
        public static let duplicateVariant = Self(.duplicateVariant)

        /// An experiment identifier is empty or contains the separator byte (NUL).
        public static let invalidExperimentIdentifier = Self(.invalidExperimentIdentifier)

        /// A count is negative, or successes exceed trials.
        public static let invalidCount = Self(.invalidCount)

        /// Observed counts and weights differ in number.
        public static let countMismatch = Self(.countMismatch)

        /// A rate, a lift, α or power is outside its range (or not finite).
        public static let parameterOutOfRange = Self(.parameterOutOfRange)
    }
}
