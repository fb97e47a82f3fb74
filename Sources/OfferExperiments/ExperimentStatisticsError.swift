/// Why an experiment computation refused its input: the statistics never trap on values from outside (a policy file,
/// the store, a request); they throw this instead.
///
/// Compare ``code`` in tests and map it where the error leaves the application; ``message`` says what is wrong for
/// humans and never carries a customer identifier.
public struct ExperimentStatisticsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable reason, in `snake_case`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The `snake_case` name.
        public let rawValue: String

        /// A code by its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        public var description: String { rawValue }

        /// No variants, or more variants than the computation takes.
        public static let noVariants = Code(rawValue: "no_variants")
        /// A weight is zero or negative.
        public static let weightNotPositive = Code(rawValue: "weight_not_positive")
        /// The weights add up to more than an `Int` holds.
        public static let weightsOverflow = Code(rawValue: "weights_overflow")
        /// Two variants have the same name.
        public static let duplicateVariant = Code(rawValue: "duplicate_variant")
        /// An experiment identifier is empty or contains the separator byte (NUL).
        public static let invalidExperimentIdentifier = Code(rawValue: "invalid_experiment_identifier")
        /// A count is negative, or successes exceed trials.
        public static let invalidCount = Code(rawValue: "invalid_count")
        /// Observed counts and weights differ in number.
        public static let countMismatch = Code(rawValue: "count_mismatch")
        /// A rate, a lift, α or power is outside its range (or not finite).
        public static let parameterOutOfRange = Code(rawValue: "parameter_out_of_range")
    }

    /// What went wrong.
    public let code: Code
    /// What is wrong and what to do, for humans.
    public let message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
