import Crypto

/// One arm of an experiment: its name and its share of customers as an integer weight.
public struct ExperimentVariant: Sendable, Hashable {
    /// The variant's name, unique within its experiment.
    public let name: String
    /// Its share of customers relative to the other variants' weights; greater than zero.
    public let weight: Int

    /// A variant by name and weight (checked by ``ExperimentAssignment/init(experimentIdentifier:variants:)``).
    public init(name: String, weight: Int) {
        self.name = name
        self.weight = weight
    }
}

/// Deterministic, sticky assignment of customers to an experiment's variants: no randomness and no stored state,
/// so every replica, restart and reload gives a customer the same variant for as long as the experiment's
/// identifier and variants stay the same.
///
/// The bucket of a customer is SHA-256 of `experimentIdentifier`, one NUL byte, and the customer key (both UTF-8);
/// its first eight bytes, read big-endian as a 64-bit number `h`, map to `⌊h · totalWeight / 2⁶⁴⌋` in
/// `[0, totalWeight)`. Variants own consecutive ranges of buckets in the order given, each as wide as its weight.
/// Each bucket's probability is within 2⁻⁶⁴ of `1/totalWeight`. Because the experiment identifier is hashed too, one
/// customer's variants in two experiments are independent.
///
/// ## Usage
/// ```swift
/// let assignment = try ExperimentAssignment(
///     experimentIdentifier: "winback-2026-12",
///     variants: [ExperimentVariant(name: "holdout", weight: 1), ExperimentVariant(name: "half-off", weight: 1)])
/// let variant = assignment.variant(for: customerKey)   // the same variant, every time
/// ```
public struct ExperimentAssignment: Sendable, Hashable {
    /// The byte between the experiment identifier and the customer key in the hashed text.
    public static let separator: UInt8 = 0

    /// The experiment's identifier; part of every hash.
    public let experimentIdentifier: String
    /// The variants, in the order that lays out their bucket ranges.
    public let variants: [ExperimentVariant]
    /// The sum of the weights: the number of buckets.
    public let totalWeight: Int

    /// Checks and keeps an experiment's variants.
    ///
    /// - Parameters:
    ///   - experimentIdentifier: Not empty, without a NUL character.
    ///   - variants: At least one; names unique; each weight greater than zero; the weights' sum an `Int`.
    /// - Throws: ``ExperimentStatisticsError`` with `invalid_experiment_identifier`, `no_variants`,
    ///   `duplicate_variant`, `weight_not_positive` or `weights_overflow`.
    public init(experimentIdentifier: String, variants: [ExperimentVariant]) throws(ExperimentStatisticsError) {
        guard !experimentIdentifier.isEmpty, !experimentIdentifier.utf8.contains(Self.separator) else {
            throw ExperimentStatisticsError(
                .invalidExperimentIdentifier,
                "An experiment identifier must be non-empty text without a NUL character."
            )
        }
        guard !variants.isEmpty else {
            throw ExperimentStatisticsError(.noVariants, "Experiment '\(experimentIdentifier)' has no variants.")
        }
        var names = Set<String>()
        var total = 0
        for variant in variants {
            guard names.insert(variant.name).inserted else {
                throw ExperimentStatisticsError(
                    .duplicateVariant,
                    "Experiment '\(experimentIdentifier)' names variant '\(variant.name)' twice."
                )
            }
            guard variant.weight > 0 else {
                throw ExperimentStatisticsError(
                    .weightNotPositive,
                    "Variant '\(variant.name)' has weight \(variant.weight); weights must be greater than zero."
                )
            }
            let (sum, overflow) = total.addingReportingOverflow(variant.weight)
            guard !overflow else {
                throw ExperimentStatisticsError(
                    .weightsOverflow,
                    "The weights of experiment '\(experimentIdentifier)' add up to more than \(Int.max)."
                )
            }
            total = sum
        }
        self.experimentIdentifier = experimentIdentifier
        self.variants = variants
        self.totalWeight = total
    }

    /// The customer's bucket in `[0, totalWeight)`.
    ///
    /// - Parameter customer: The customer key (for example the keyed hash of the application username).
    /// - Returns: The same bucket for the same identifier, weights and customer, always.
    public func bucket(for customer: String) -> Int {
        var message = Array(experimentIdentifier.utf8)
        message.append(Self.separator)
        message.append(contentsOf: customer.utf8)
        let digest = SHA256.hash(data: message)
        var prefix: UInt64 = 0
        for byte in digest.prefix(8) { prefix = prefix << 8 | UInt64(byte) }
        // ⌊prefix · total / 2⁶⁴⌋ < total, so the conversion cannot trap.
        return Int(prefix.multipliedFullWidth(by: UInt64(totalWeight)).high)
    }

    /// The customer's variant.
    ///
    /// - Parameter customer: The customer key.
    /// - Returns: The variant whose bucket range holds ``bucket(for:)``.
    public func variant(for customer: String) -> ExperimentVariant {
        var remaining = bucket(for: customer)
        for variant in variants {
            if remaining < variant.weight { return variant }
            remaining -= variant.weight
        }
        return variants[variants.count - 1]  // unreachable: the buckets end at totalWeight
    }
}
